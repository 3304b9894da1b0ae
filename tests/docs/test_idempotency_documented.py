"""The interface reference's Idempotency-Key table (docs/interface.md §5) names exactly the
routes whose OpenAPI operation takes the header, required or optional as it says."""

from __future__ import annotations

import re

from fastapi import FastAPI

from tests.support.docs import INTERFACE, normalise_path, table_rows

HEADER = "idempotency-key"


def _documented() -> dict[str, set[str]]:
    """ "required" and "optional" -> `METHOD /path` of the routes the §5 table puts there."""
    text = INTERFACE.read_text(encoding="utf-8")
    section = text[text.index("## 5. Idempotency") : text.index("## 6.")]
    found: dict[str, set[str]] = {"required": set(), "optional": set()}
    for routes, header in table_rows(section):
        kind = header.split()[0]
        for route in re.findall(r"`([A-Z]+ /[^`]*)`", routes):
            method, path = route.split(" ", 1)
            found.setdefault(kind, set()).add(f"{method} {normalise_path(path)}")
    return found


def _served(app: FastAPI) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"required": set(), "optional": set()}
    for path, operations in app.openapi()["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "header" and parameter["name"].lower() == HEADER:
                    kind = "required" if parameter.get("required") else "optional"
                    found[kind].add(f"{method.upper()} {normalise_path(path)}")
    return found


def test_the_table_names_the_routes_that_take_the_key(routes_app: FastAPI) -> None:
    documented, served = _documented(), _served(routes_app)
    assert "POST /v1/deals/{}/acceptance" in served["required"]  # the scan finds them
    assert documented["required"] == served["required"]
    assert documented["optional"] == served["optional"]
