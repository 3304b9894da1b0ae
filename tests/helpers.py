"""Builders for accounts and common requests, shared by the tests."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import bindparam, insert

from agent_broker import clock
from agent_broker.accounts.models import Account
from agent_broker.db.prepared import Prepared
from agent_broker.ledger import books
from agent_broker.ledger.service import credit

# An account row through a prepared statement (agent_broker.db.prepared), for tests of the
# data layer; status is left out: its column default ('active') fills it.
NEW_ACCOUNT = Prepared(
    insert(Account.__table__).values(
        id=bindparam("id"),
        handle=bindparam("handle"),
        api_key_hash=bindparam("key_hash"),
        key_preview="ab_l...0000",
        created_at=bindparam("created_at"),
    )
)


@dataclass
class Agent:
    account_id: str
    api_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key}


def register(client: TestClient, **headers: str) -> Agent:
    response = client.post("/v1/account/register", json={"accepted_terms": True}, headers=headers)
    assert response.status_code == 201, response.text
    body = response.json()
    return Agent(account_id=body["account_id"], api_key=body["api_key"])


def complete_profile(client: TestClient, agent: Agent) -> None:
    response = client.put(
        "/v1/account/contact",
        headers=agent.headers,
        json={"contact_name": "Ops Team", "contact_email": "ops@agents.dev"},
    )
    assert response.status_code == 204, response.text
    response = client.put(
        "/v1/account/route",
        headers=agent.headers,
        json={"deal_route": "https://agents.dev/deals/", "route_protocol_binding": "JSONRPC"},
    )
    assert response.status_code == 204, response.text


def fund(app: FastAPI, account_id: str, amount_micro: int, *, real_money: bool = False) -> None:
    """Credit a wallet through the ledger, as the operator's admin credit does."""
    with app.state.db.writer() as session:
        credit(
            session,
            account_id,
            amount_micro,
            source=books.OPERATOR,
            kind="test_credit",
            memo="test funding",
            now=clock.now(),
            real_money=real_money,
        )
        session.commit()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.01)


def new_key() -> str:
    return str(uuid.uuid4())


def assert_problem(response, status: int, reason: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["reason"] == reason
    assert body["type"].endswith("/" + reason)
    assert body["title"]
    assert body["detail"]
    return body


@contextmanager
def serving(app: FastAPI) -> Iterator[tuple[str, int]]:
    """The app served by a real uvicorn on a free loopback port: (base URL, port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("live server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
