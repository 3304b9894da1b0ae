"""Property-based test over the OpenAPI document the service serves: every operation, fed
generated valid and invalid requests, never answers 5xx and answers only what the document
declares (status code, content type, response schema), on SQLite and on PostgreSQL.

Bounded so it stays fast and reproducible: a few examples per operation and generation
mode, a fixed seed, derandomised, no example database, no deadline. The caller holds a real,
funded API key with a complete profile, so authenticated routes are exercised beyond 401.
A documented 429 (rate limits, scanner brake) is an allowed answer, not a failure."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from tempfile import TemporaryDirectory

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import TestPhase
from schemathesis.python import asgi as schemathesis_asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agent_broker.app import create_app
from agent_broker.config import Settings
from tests.support.accounts import Agent, complete_profile, fund, register

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Per operation and generation mode; raise it for a deeper local run.
MAX_EXAMPLES = int(os.environ.get("BROKER_TEST_FUZZ_EXAMPLES", "20"))


def _served_document() -> dict:
    """The document GET /openapi.json serves (FastAPI serves app.openapi() as JSON).

    Read at collection time, when the operations become test items; building it needs no
    database. (Schemathesis's fixture-based loader, schemathesis.pytest.from_fixture, reads
    Node._nodeid, which pytest 9.2 no longer has; so each item instead passes the app of its
    own database to call_and_validate.)"""
    with TemporaryDirectory() as var:
        app = create_app(
            Settings(database_url=f"sqlite:///{var}/unused.db", var_dir=var), run_jobs=False
        )
        document = json.loads(json.dumps(app.openapi()))
        app.state.context.db.dispose()
    return document


schema = schemathesis.openapi.from_dict(
    _served_document(),
    config=schemathesis.Config.from_dict(
        {
            "seed": 20240501,
            "generation": {
                "mode": "all",
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
            },
            "phases": {"stateful": {"enabled": False}},
        }
    ),
)


@dataclass
class Target:
    app: FastAPI
    caller: Agent
    # Real objects the caller may act on, by path parameter name.
    path_values: dict[str, str]


def _created(response) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == 201, response.text
    return response.json()


def _seed_market(client: TestClient, caller: Agent, other: Agent) -> dict[str, str]:
    """A listing of another trader the caller may negotiate on, a thread on the caller's
    own listing where it is the caller's turn, and a deal the caller is a party to."""

    def post_listing(agent: Agent) -> str:
        body = {
            "title": "Clean and deduplicate CSV exports",
            "category": "data_processing",
            "listing_type": "sell",
            "price_micro": 2_500_000,
            "body": "I normalise columns and drop duplicate rows. Up to 1 GB per job.",
            "delivery_deadline_days": 3,
        }
        headers = {**agent.headers, "Idempotency-Key": str(uuid.uuid4())}
        return _created(client.post("/v1/listings", json=body, headers=headers))["id"]

    def open_thread(agent: Agent, listing_id: str) -> str:
        headers = {**agent.headers, "Idempotency-Key": str(uuid.uuid4())}
        body = {"diff": "I can do it in 2 days for $2.50"}
        url = f"/v1/listings/{listing_id}/threads"
        return _created(client.post(url, json=body, headers=headers))["id"]

    others_listing = post_listing(other)
    thread = open_thread(other, post_listing(caller))
    sealed = open_thread(other, post_listing(caller))
    headers = {**caller.headers, "Idempotency-Key": str(uuid.uuid4())}
    deal = _created(client.post(f"/v1/threads/{sealed}/finalize", headers=headers))["id"]
    handle = client.get("/v1/account", headers=caller.headers).json()["handle"]
    return {"listing_id": others_listing, "thread_id": thread, "deal_id": deal, "handle": handle}


@pytest.fixture
def target(make_app) -> Iterator[Target]:
    # Scanner refusals would otherwise lock the caller out with 429 after five refusals.
    # Streams end within the example's time (BROKER_EVENT_STREAM_SECONDS).
    app = make_app(violation_limit="100000/hour", event_stream_seconds=0.2)
    with TestClient(app) as client:
        caller, other = register(client), register(client)
        for agent in (caller, other):
            complete_profile(client, agent)
            fund(app, agent.account_id, 10_000_000_000, real_money=True)
        path_values = _seed_market(client, caller, other)
    yield Target(app, caller, path_values)
    # Schemathesis keeps each application's lifespan running until the process ends.
    schemathesis_asgi.shutdown_lifespans()


def _negated(case: schemathesis.Case, location: ParameterLocation) -> bool:
    if case.meta is None:
        return False
    component = case.meta.components.get(location)
    return component is not None and component.mode.is_negative


def _fuzzing(case: schemathesis.Case) -> bool:
    return case.meta is not None and case.meta.phase.name == TestPhase.FUZZING


@schema.parametrize()
# One funded caller serves every generated request of an operation; nothing is reset between.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_server_errors_and_responses_match_the_document(
    case: schemathesis.Case, target: Target
) -> None:
    if case.path_parameters and _fuzzing(case) and not _negated(case, ParameterLocation.PATH):
        # Valid fuzzed requests name real objects, so they reach the rules behind the 404;
        # the coverage phase keeps its generated identifiers (empty, long, odd characters).
        for name in case.path_parameters.keys() & target.path_values.keys():
            case.path_parameters[name] = target.path_values[name]
    declares_key = any(p.name.lower() == "idempotency-key" for p in case.operation.headers)
    if declares_key and not _negated(case, ParameterLocation.HEADER):
        # A fresh UUID per request whose headers are meant to be valid: the document types
        # the key as a string, and generated strings would stop at 400 or replay earlier keys.
        case.headers = {**(case.headers or {}), "Idempotency-Key": str(uuid.uuid4())}
    case.call_and_validate(app=target.app, headers=target.caller.headers, checks=CHECKS)
