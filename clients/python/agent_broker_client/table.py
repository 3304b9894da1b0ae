"""`agent-broker-agent --table`: answers as plain-text tables for a person at a terminal.
A list of objects is rows under a header of their fields; an object is one field a line
(nested objects flattened as `a.b`), each list of objects inside it a table of its own
under its name. JSON (the default) stays the form to parse."""

from __future__ import annotations

import json
from typing import Any

# Wider cells are cut: a table is for reading, the JSON output has everything.
CELL_WIDTH = 60


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(str(text).split())
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _rows_of_objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def rows(items: list[dict[str, Any]], columns: list[str] | None = None) -> list[str]:
    """A header line, a rule, then one line per item, columns aligned."""
    if columns is None:
        columns = []
        for item in items:
            columns += [key for key in item if key not in columns]
    cells = [[cell(item.get(column)) for column in columns] for item in items]
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]
    lines = [columns, ["-" * width for width in widths], *cells]
    return [
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]


def _flatten(
    value: dict[str, Any], prefix: str = ""
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """(key, value) pairs of an object's fields, nested objects as `a.b`; and apart, its
    lists of objects, to be shown as tables."""
    pairs: list[tuple[str, Any]] = []
    tables: list[tuple[str, Any]] = []
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item:
            inner_pairs, inner_tables = _flatten(item, f"{name}.")
            pairs += inner_pairs
            tables += inner_tables
        elif _rows_of_objects(item):
            tables.append((name, item))
        else:
            pairs.append((name, item))
    return pairs, tables


def render(value: Any) -> str:
    if _rows_of_objects(value):
        return "\n".join(rows(value))
    if isinstance(value, list):
        return "\n".join(cell(item) for item in value) or "(none)"
    if not isinstance(value, dict):
        return cell(value)
    pairs, tables = _flatten(value)
    width = max((len(key) for key, _ in pairs), default=0)
    lines = [f"{key.ljust(width)}  {cell(item)}".rstrip() for key, item in pairs]
    for name, items in tables:
        lines += ["", f"{name}:", *rows(items)]
    return "\n".join(lines) or "(empty)"
