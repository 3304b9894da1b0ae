"""Reading the documents for the docs tests (tests/docs): which Markdown files there are,
their tables, links and sentences, and what the package really emits and serves."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "agent_broker"
AGENT_GUIDE = ROOT / "docs" / "agent-guide.md"
ERRORS = ROOT / "docs" / "agents" / "errors.md"
INTERFACE = ROOT / "docs" / "interface.md"
CONFIGURATION = ROOT / "docs" / "operators" / "configuration.md"
SCALING = ROOT / "docs" / "operators" / "scaling.md"


def markdown_documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _without_code(text: str) -> str:
    """The text with fenced code blocks blanked (their lines kept, so line numbers hold)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


# --- tables -------------------------------------------------------------------------------

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def table_rows(text: str) -> list[list[str]]:
    """The body rows of every Markdown table, as cells. A table is a header row, a separator
    row, then rows up to the first line that is not one: rows after a blank line are not
    part of it (they render as text), so they are not returned."""
    rows: list[list[str]] = []
    lines = _without_code(text).splitlines()
    i = 0
    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and _SEPARATOR.match(lines[i + 1].strip())
        ):
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = re.split(r"(?<!\\)\|", lines[i].strip().strip("|"))
                rows.append([cell.strip() for cell in cells])
                i += 1
        else:
            i += 1
    return rows


def first_cell_codes(text: str) -> set[str]:
    """Every `code` named in the first cell of a table row."""
    codes: set[str] = set()
    for row in table_rows(text):
        codes.update(re.findall(r"`([a-z0-9_]+)`", row[0]))
    return codes


# --- reasons ------------------------------------------------------------------------------


def _python_files() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def emitted_reasons() -> set[str]:
    """Reasons the package answers with: every `Reason.x` it refers to (a problem class's
    `reason = Reason.x`, or `reason=Reason.x` where one is raised). The enumeration's own
    definitions are assignments, not references, so a reason nothing uses is not here."""
    found: set[str] = set()
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Reason"
            ):
                found.add(node.attr)
    return found


# --- routes -------------------------------------------------------------------------------


def normalise_path(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def route_index(text: str) -> set[str]:
    """`METHOD /path` (or a bare `/path`) in the first cells of the agent guide's "Every
    route" table, with path parameters written as `{}`."""
    start = text.index("\n## Every route\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    entries = set()
    for row in table_rows(section):
        match = re.fullmatch(r"`((?:[A-Z]+ )?/[^`]*)`", row[0])
        if match:
            method, _, path = match.group(1).rpartition(" ")
            entries.add(f"{method} {normalise_path(path)}".strip())
    return entries


def served_routes(app, *, hidden: bool = False) -> set[str]:  # type: ignore[no-untyped-def]
    """`METHOD /path` for every route of the app in its OpenAPI document (HEAD left out),
    and a bare `/path` for a mounted endpoint that takes every method; with `hidden`, the
    routes left out of the document too (the HTML pages, /metrics, /openapi.json, ...)."""
    served: set[str] = set()
    for route in app.routes:
        path = getattr(route, "path", None)
        if path is None or not (hidden or getattr(route, "include_in_schema", True)):
            continue
        methods = getattr(route, "methods", None)
        if not methods:
            served.add(normalise_path(path))
            continue
        served.update(f"{m} {normalise_path(path)}" for m in methods if m != "HEAD")
    return served


# --- links --------------------------------------------------------------------------------

_LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|\!\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, target) of every relative link and image in a Markdown file, outside
    code blocks; the target without its #fragment."""
    text = _without_code(path.read_text(encoding="utf-8"))
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # http:, mailto:, ... or a fragment of this page
            yield number, target.split("#", 1)[0]


# --- claims that a feature is not built ---------------------------------------------------

UNBUILT = re.compile(
    r"not (?:yet )?implemented|not (?:yet )?built|never emitted|not emitted|no push channel"
    r"|never calls your|never calls the|coming soon|not (?:yet )?available|not supported yet"
    r"|is planned|are planned|will be added",
    re.IGNORECASE,
)

# A served feature: what names it in prose, and a route of the app that shows it is served.
FEATURES: dict[str, tuple[str, str]] = {
    "x402": (r"\bx402\b", "GET /.well-known/x402"),
    "certification": (r"certif", "POST /v1/account/certification"),
    "A2A": (r"\bA2A\b|agent card", "POST /a2a"),
    "events": (r"webhook|push|events? to agents|\bevents\b", "PUT /v1/account/webhook"),
    "MCP": (r"\bMCP\b", "/mcp"),
    "processors": (r"processor|buying credits|credit packs", "POST /dashboard/credits"),
    "domain proof": (r"domain proof|welcome credit", "POST /v1/account/domain/verify"),
    "wallet recovery": (
        r"wallet key recovery|sign-in with ethereum",
        "POST /v1/account/wallet/recover",
    ),
    "deal route calls": (r"your route|deal route", "POST /v1/account/certification/test"),
    "public pages": (r"public pages|/market\b", "GET /market"),
}


def sentences(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, sentence) of the prose of a Markdown text, code blocks left out."""
    paragraph: list[tuple[int, str]] = []

    def flush() -> Iterable[tuple[int, str]]:
        if not paragraph:
            return []
        start = paragraph[0][0]
        joined = " ".join(line.strip() for _, line in paragraph)
        return [(start, part) for part in re.split(r"(?<=[.!?])\s+(?=[A-Z`(*])", joined)]

    for number, line in enumerate(_without_code(text).splitlines(), start=1):
        if not line.strip() or line.startswith("|") or line.lstrip().startswith(("- ", "#")):
            yield from flush()
            paragraph = []
        if line.strip() and not line.startswith("#"):
            if line.startswith("|"):
                yield number, line  # a table row is a sentence of its own
            else:
                paragraph.append((number, line))
    yield from flush()


def unbuilt_claims(text: str, served: set[str], emitted: set[str]) -> list[tuple[int, str]]:
    """Sentences that call something unbuilt (or unemitted) while naming a feature the app
    serves or a reason the package emits."""
    claims = []
    for number, sentence in sentences(text):
        if not UNBUILT.search(sentence):
            continue
        named = [
            name
            for name, (pattern, route) in FEATURES.items()
            if route in served and re.search(pattern, sentence, re.IGNORECASE)
        ]
        named += [code for code in emitted if re.search(rf"\b{code}\b", sentence)]
        if named:
            claims.append((number, f"{sentence!r} names {sorted(named)}"))
    return claims
