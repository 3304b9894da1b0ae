"""Domain proof against a local HTTPS server with its own CA: the service reaches it through
BROKER_OUTBOUND_RESOLVE (each test name -> 127.0.0.1 and the server's port) and trusts its
CA through BROKER_OUTBOUND_CA_BUNDLE; private fetches are allowed unless a test says not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.helpers import Agent
from tests.tls_server import Answer, TLSServer, tls_server

# Names the test certificate covers; each agent's deal route uses one of them.
DOMAINS = ("agents.dev", "buyer.dev", "example.co.uk", "third.dev")
CHALLENGE_PATH = "/.well-known/svc-challenge.txt"


@pytest.fixture
def challenge_server(tmp_path: Path) -> Iterator[TLSServer]:
    with tls_server(tmp_path, *DOMAINS) as server:
        yield server


@pytest.fixture
def outbound_settings(challenge_server: TLSServer) -> dict[str, Any]:
    resolve = ",".join(f"{name}=127.0.0.1:{challenge_server.port}" for name in DOMAINS)
    return {
        "allow_private_fetch": True,
        "outbound_ca_bundle": str(challenge_server.ca_path),
        "outbound_resolve": resolve,
    }


@pytest.fixture
def make_domain_app(
    make_app: Callable[..., FastAPI], outbound_settings: dict[str, Any]
) -> Callable[..., FastAPI]:
    def build(**overrides: Any) -> FastAPI:
        return make_app(**{**outbound_settings, **overrides})

    return build


@pytest.fixture
def app(make_domain_app: Callable[..., FastAPI]) -> FastAPI:
    return make_domain_app()


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
