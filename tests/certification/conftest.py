"""Certification against a local HTTPS deal route: the domain tests' server, whose
`/deal` path answers the liveness probe as each test sets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_broker.jobs.runner import run_job
from tests.domains.conftest import (  # noqa: F401 - fixtures
    challenge_server,
    make_domain_app,
    outbound_settings,
    prove,
)
from tests.helpers import Agent, new_key, register
from tests.tls_server import Answer, TLSServer

ROUTE_PATH = "/deal"
PERIOD_MICRO = 9_000_000  # 18,000 credits
ROUTE = f"https://agents.dev{ROUTE_PATH}"


def echoing(body: bytes) -> Answer:
    """A route that follows liveness-v1: 200 with the nonce sent."""
    nonce = json.loads(body).get("nonce")
    answer = {"type": "liveness-v1", "nonce": nonce, "status": "ok"}
    return Answer(body=json.dumps(answer).encode(), headers={"Content-Type": "application/json"})


def answer_liveness(server: TLSServer) -> None:
    server.answer_with(ROUTE_PATH, echoing)


@pytest.fixture
def app(make_domain_app):  # noqa: F811
    # No welcome credit, so each test sets the balance it needs.
    return make_domain_app(domain_grant_micro=0)


@pytest.fixture
def prover(client: TestClient, challenge_server: TLSServer) -> Agent:  # noqa: F811
    """An agent whose deal route is on a domain it proved."""
    agent = register(client)
    prove(client, challenge_server, agent, ROUTE)
    return agent


def status(client: TestClient, agent: Agent) -> dict[str, Any]:
    response = client.get("/v1/account/certification", headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()


def free_test(client: TestClient, agent: Agent):  # type: ignore[no-untyped-def]
    return client.post("/v1/account/certification/test", headers=agent.headers)


def subscribe(client: TestClient, agent: Agent, key: str | None = None):  # type: ignore[no-untyped-def]
    headers = {**agent.headers, "Idempotency-Key": key or new_key()}
    return client.post("/v1/account/certification", headers=headers)


def cancel(client: TestClient, agent: Agent):  # type: ignore[no-untyped-def]
    return client.post("/v1/account/certification/cancel", headers=agent.headers)


def balance(client: TestClient, agent: Agent) -> int:
    response = client.get("/v1/account", headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()["balance_micro"]


def run(app, name: str) -> str:  # type: ignore[no-untyped-def]
    outcome = run_job(app.state.db, app.state.settings, name)
    assert outcome is not None
    return outcome
