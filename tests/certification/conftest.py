"""Certification against a local HTTPS deal route: the domain tests' server, whose
`/deal` path answers the liveness probe as each test sets."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.domains.conftest import (  # noqa: F401 - fixtures
    app,
    challenge_server,
    make_domain_app,
    outbound_settings,
    prove,
)
from tests.helpers import Agent, register
from tests.tls_server import Answer, TLSServer

ROUTE_PATH = "/deal"
ROUTE = f"https://agents.dev{ROUTE_PATH}"


def echoing(body: bytes) -> Answer:
    """A route that follows liveness-v1: 200 with the nonce sent."""
    nonce = json.loads(body).get("nonce")
    answer = {"type": "liveness-v1", "nonce": nonce, "status": "ok"}
    return Answer(body=json.dumps(answer).encode(), headers={"Content-Type": "application/json"})


def answer_liveness(server: TLSServer) -> None:
    server.answer_with(ROUTE_PATH, echoing)


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
