"""Domain proof against the local HTTPS server (tests/support/tls.py): the names its
certificate covers, the challenge file, and the calls that prove a deal route's domain;
and a deal route that answers the certification's liveness probe."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from tests.support.accounts import Agent
from tests.support.tls import Answer, TLSServer

# Names the test certificate covers; each agent's deal route uses one of them.
DOMAINS = ("agents.dev", "buyer.dev", "example.co.uk", "third.dev")
CHALLENGE_PATH = "/.well-known/svc-challenge.txt"
GRANT = 10_000_000  # the first proof's welcome credit (domain_grant_micro's default)


def set_route(client: TestClient, agent: Agent, route: str) -> None:
    response = client.put("/v1/account/route", headers=agent.headers, json={"deal_route": route})
    assert response.status_code == 204, response.text


def challenge(client: TestClient, agent: Agent) -> dict[str, Any]:
    response = client.get("/v1/account/domain", headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()


def serve_token(server: TLSServer, token: str, *, suffix: bytes = b"") -> None:
    server.answer(CHALLENGE_PATH, Answer(body=token.encode() + suffix))


def verify(client: TestClient, agent: Agent):  # type: ignore[no-untyped-def]
    return client.post("/v1/account/domain/verify", headers=agent.headers)


def prove(client: TestClient, server: TLSServer, agent: Agent, route: str) -> dict[str, Any]:
    """Set the route, serve the token, verify: the 200 body."""
    set_route(client, agent, route)
    serve_token(server, challenge(client, agent)["token"])
    response = verify(client, agent)
    assert response.status_code == 200, response.text
    return response.json()


def echoing(body: bytes) -> Answer:
    """A deal route that follows liveness-v1: 200 with the nonce sent."""
    nonce = json.loads(body).get("nonce")
    answer = {"type": "liveness-v1", "nonce": nonce, "status": "ok"}
    return Answer(body=json.dumps(answer).encode(), headers={"Content-Type": "application/json"})
