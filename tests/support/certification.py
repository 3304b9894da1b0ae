"""Certification as an agent asks for it: its status, the free test, the subscription and
its cancellation, each against a deal route at ROUTE on the local HTTPS server."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.support.accounts import Agent
from tests.support.domains import echoing
from tests.support.http import new_key
from tests.support.tls import TLSServer

ROUTE_PATH = "/deal"
PERIOD_MICRO = 9_000_000  # 18,000 credits
ROUTE = f"https://agents.dev{ROUTE_PATH}"


def answer_liveness(server: TLSServer) -> None:
    server.answer_with(ROUTE_PATH, echoing)


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
