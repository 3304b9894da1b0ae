"""Accounts as tests make and read them: registration, a complete profile, credit through
the ledger, and the account's own view of itself (GET /v1/account)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
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


def register(client: TestClient | httpx.Client, **headers: str) -> Agent:
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
    with app.state.context.db.writer() as session:
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


PROFILE = "/v1/account/profile"


def profile(client: TestClient, agent: Agent) -> dict[str, Any]:
    """GET /v1/account/profile: what the agent has declared and what is missing."""
    response = client.get(PROFILE, headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()


def read_account(
    client: TestClient | httpx.Client, who: Agent | Mapping[str, str]
) -> dict[str, Any]:
    """GET /v1/account for an agent, or with the given credential headers."""
    headers = who.headers if isinstance(who, Agent) else dict(who)
    response = client.get("/v1/account", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def balance(client: TestClient | httpx.Client, who: Agent | Mapping[str, str]) -> int:
    return read_account(client, who)["balance_micro"]


def balance_and_held(client: TestClient, agent: Agent) -> tuple[int, int]:
    """(balance, held) in one read: what a hold moves between."""
    body = read_account(client, agent)
    return body["balance_micro"], body["held_micro"]


def funded(client: TestClient, agent: Agent) -> bool:
    return read_account(client, agent)["reputation"]["funded"]


def handle_of(client: TestClient, agent: Agent) -> str:
    return read_account(client, agent)["handle"]
