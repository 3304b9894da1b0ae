"""The standalone client (clients/python) against the service it speaks to: its generated
models are exactly what the service's OpenAPI document gives today, every call of its
table is a route of that document, keyed exactly where the route takes an
Idempotency-Key, and what it copies from the server (its version, the facilitator
deadline its paid timeout is built on) is the server's."""

from __future__ import annotations

import importlib.util
import inspect
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import agent_broker_client
from agent_broker.payments.x402 import facilitator
from agent_broker_client import calls, payment

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("client_generate", CLIENT / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _generator()


@pytest.fixture(scope="module")
def document(generator: ModuleType) -> dict[str, Any]:
    return generator.openapi_document()


def test_the_committed_models_are_the_ones_the_service_document_generates(
    generator: ModuleType, document: dict[str, Any], tmp_path: Path
) -> None:
    regenerated = tmp_path / "models.py"
    regenerated.write_text(generator.models_source(document))
    committed = generator.MODELS.read_text()
    assert regenerated.read_text() == committed, (
        "clients/python/agent_broker_client/models.py differs from the service's models: "
        "run `python clients/python/generate.py`"
    )


def test_the_check_mode_reports_a_stale_file(
    generator: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stale = tmp_path / "models.py"
    stale.write_text("# stale\n")
    monkeypatch.setattr(generator, "MODELS", stale)
    monkeypatch.setattr(generator, "openapi_document", lambda: {"openapi": "3.1.0"})
    monkeypatch.setattr(generator, "models_source", lambda document: "# fresh\n")
    assert generator.main(["--check"]) == 1
    assert stale.read_text() == "# stale\n"
    assert generator.main([]) == 0
    assert stale.read_text() == "# fresh\n"
    assert generator.main(["--check"]) == 0


def _every_call() -> list[calls.Call]:
    """One call of each operation of the table, with placeholder arguments."""
    made = []
    for name, build in inspect.getmembers(calls, inspect.isfunction):
        if build.__module__ != calls.__name__ or name.startswith("_"):
            continue
        parameters = inspect.signature(build).parameters
        if name == "feed":
            made.append(build(q="csv"))
            continue
        arguments = {
            p: (1 if p in ("score", "wait") else {} if p == "fields" else "x") for p in parameters
        }
        made.append(build(**arguments))
    return made


def _operation(document: dict[str, Any], call: calls.Call) -> dict[str, Any]:
    segments = call.path.split("/")
    # Literal segments before parameters: /v1/account/webhook before any /v1/account/{x}.
    for template, methods in sorted(document["paths"].items(), key=lambda p: p[0].count("{")):
        pattern = template.split("/")
        if len(pattern) == len(segments) and all(
            t == s or (t.startswith("{") and t.endswith("}"))
            for t, s in zip(pattern, segments, strict=True)
        ):
            operation = methods.get(call.method.lower())
            if operation is not None:
                return operation
    raise AssertionError(f"{call.method} {call.path} is no operation of the service")


def test_every_call_is_a_route_and_keyed_exactly_where_the_route_takes_a_key(
    document: dict[str, Any],
) -> None:
    table = _every_call()
    assert len(table) == 35  # every operation of calls.py
    for call in table:
        operation = _operation(document, call)
        takes_key = any(
            parameter.get("in") == "header" and parameter["name"].lower() == "idempotency-key"
            for parameter in operation.get("parameters", [])
        )
        assert call.keyed == takes_key, f"{call.method} {call.path}: keyed={call.keyed}"
        # What is retried: reads, and writes the service deduplicates by their key.
        assert call.retryable == (call.method in ("GET", "HEAD") or takes_key)


def test_writes_without_a_key_are_never_retried() -> None:
    unkeyed = {
        (call.method, call.path.split("/")[-1]) for call in _every_call() if not call.retryable
    }
    for expected in (
        ("POST", "offers"),
        ("POST", "ratings"),
        ("POST", "dispute"),
        ("PUT", "webhook"),
    ):
        assert expected in unkeyed


def test_the_client_carries_the_server_version_and_facilitator_deadline() -> None:
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    client = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert client["version"] == server["version"] == agent_broker_client.__version__
    assert sorted(client["dependencies"]) == sorted(
        pin for pin in server["dependencies"] if pin.split("==")[0] in ("httpx", "pydantic")
    )
    assert payment.SETTLE_DEADLINE_SECONDS == facilitator.SETTLE_DEADLINE_SECONDS
