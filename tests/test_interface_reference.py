"""The repository's own documents are what its files cite: every "docs/interface.md §N"
names a section that exists, the interface reference numbers its sections in order, no
file cites a document kept outside the repository, and the decisions index lists every
decision file (docs/decisions/README.md) and nothing that is not there."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from starlette.routing import Route

ROOT = Path(__file__).resolve().parent.parent
INTERFACE = ROOT / "docs" / "interface.md"
DECISIONS = ROOT / "docs" / "decisions"

# Where a walk of the tree must not look when git cannot list the files.
_SKIPPED_DIRS = {
    ".git",
    ".venv",
    "venv",
    "var",
    "build",
    "dist",
    "__pycache__",
    ".hypothesis",
    ".ruff_cache",
    ".pytest_cache",
    ".mypy_cache",
    ".import_linter_cache",
    ".grimp_cache",
}
_SECTION_HEADING = re.compile(r"^(#{2,4}) (\d+(?:\.\d+)*)\.? \S", re.MULTILINE)
_SECTION_REF = re.compile(r"§(\d+(?:\.\d+)*)")
# The interface text, design notes and deployment facts the project was built from are
# not part of the repository; a citation of one of them points nowhere.
_OUTSIDE_DOCUMENTS = re.compile(
    r"\b(?:" + "|".join(("SPEC", "DESIGN", "FACTS")) + r")(?:\.md\b|\s+\d)"
)


def _repository_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
        names = [name for name in listed.decode().split("\0") if name]
        return [ROOT / name for name in names if (ROOT / name).is_file()]
    except (OSError, subprocess.SubprocessError):
        found = []
        for path in ROOT.rglob("*"):
            parts = set(path.relative_to(ROOT).parts)
            if (
                path.is_file()
                and not parts & _SKIPPED_DIRS
                and not any(part.endswith(".egg-info") for part in parts)
            ):
                found.append(path)
        return found


def _texts() -> dict[Path, str]:
    texts = {}
    for path in _repository_files():
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # a binary file cites nothing
    return texts


def _sections() -> list[str]:
    return [number for _, number in _SECTION_HEADING.findall(INTERFACE.read_text())]


def test_the_interface_reference_numbers_its_sections_in_order():
    numbers = [tuple(int(part) for part in n.split(".")) for n in _sections()]
    assert numbers, "docs/interface.md has no numbered sections"
    assert len(set(numbers)) == len(numbers), "a section number is used twice"
    assert numbers == sorted(numbers), "sections are out of order"
    tops = [n[0] for n in numbers if len(n) == 1]
    assert tops == list(range(1, len(tops) + 1)), "top-level sections skip a number"
    for number in numbers:
        if len(number) > 1:
            assert number[:-1] in numbers, f"§{'.'.join(map(str, number))} has no parent"


def test_every_section_cited_exists():
    sections = set(_sections())
    missing = []
    for path, text in _texts().items():
        if path != INTERFACE and "docs/interface.md" not in text and "interface.md" not in text:
            continue
        for match in _SECTION_REF.finditer(text):
            if match.group(1) not in sections:
                line = text.count("\n", 0, match.start()) + 1
                missing.append(f"{path.relative_to(ROOT)}:{line}: §{match.group(1)}")
    assert not missing, "citations of sections docs/interface.md does not have:\n" + "\n".join(
        missing
    )


def test_code_cites_the_interface_reference():
    # The comments that explain a rule by the interface point at this file; the check
    # above would pass vacuously if none did.
    citing = [
        path
        for path, text in _texts().items()
        if path.suffix == ".py" and "docs/interface.md §" in text
    ]
    assert len(citing) >= 20


def test_no_file_cites_a_document_outside_the_repository():
    here = Path(__file__).resolve()
    found = []
    for path, text in _texts().items():
        if path.resolve() == here:
            continue
        for match in _OUTSIDE_DOCUMENTS.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)}")
    assert not found, "cited documents that are not in the repository:\n" + "\n".join(found)


def test_the_outside_citation_check_catches_each_form():
    for cited in ("see SPEC.md", "(SPEC 4.5 rule 2)", "DESIGN.md part 3", "FACTS 5.4's kid"):
        assert _OUTSIDE_DOCUMENTS.search(cited), cited
    for plain in ("a SPECIFIC rule", "the design", "FACTS_TABLE = {}", "SPEC's"):
        assert not _OUTSIDE_DOCUMENTS.search(plain), plain


def test_the_decisions_index_lists_every_decision_file():
    index = (DECISIONS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([a-z0-9-]+\.md)\)", index))
    on_disk = {path.name for path in DECISIONS.glob("*.md")} - {"README.md"}
    assert linked == on_disk, (
        f"not in the index: {sorted(on_disk - linked)}; "
        f"in the index but missing: {sorted(linked - on_disk)}"
    )
    for path in DECISIONS.glob("*.md"):
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*\.md|README\.md", path.name), path.name
        assert path.read_text().startswith("# "), f"{path.name} has no title"


def test_every_decision_file_cited_exists():
    cited = re.compile(r"docs/decisions/([a-z0-9-]+\.md)")
    missing = []
    for path, text in _texts().items():
        for match in cited.finditer(text):
            if not (DECISIONS / match.group(1)).is_file():
                line = text.count("\n", 0, match.start()) + 1
                missing.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)}")
    for path in DECISIONS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", path.read_text()):
            if not (path.parent / target).resolve().is_file():
                missing.append(f"docs/decisions/{path.name}: link to {target}")
    assert not missing, "decision files cited that do not exist:\n" + "\n".join(missing)


def _documented_paths() -> set[str]:
    text = INTERFACE.read_text()
    found = set()
    for path in re.findall(r"`(?:(?:GET|POST|PUT|DELETE|PATCH) )?(/[^`\s]*)`", text):
        found.add(_template(path.replace("/...", "/{}")))
    return found


def _template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_every_route_of_the_app_is_in_the_reference(make_app):
    """A route the service serves and docs/interface.md does not name is a route agents
    cannot learn of from the repository. The interactive renderers of the OpenAPI
    document (/docs, /redoc and what they load) are the framework's, not routes of the
    interface."""
    app = make_app(metrics_enabled=True)
    served = {_template(route.path) for route in app.routes if isinstance(route, Route)}
    served = {path for path in served if not path.startswith(("/docs", "/redoc"))}
    missing = sorted(served - _documented_paths())
    assert not missing, "routes docs/interface.md does not name: " + ", ".join(missing)
