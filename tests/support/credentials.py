"""Refused credentials: a route called with no key, an unknown key or a disabled account's
key must be refused, change nothing in the database, and then succeed with the party's
working key, so the refusal came from the credential and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import MetaData, select

from agent_broker.accounts.models import Account
from tests.support.accounts import Agent
from tests.support.http import assert_problem, new_key
from tests.support.market import Market

UNKNOWN_KEY = "ab_live_" + "0" * 32


@dataclass(frozen=True)
class Route:
    """One route: the party that may call it, and what a successful call answers."""

    method: str
    path: str  # may name {listing} and {thread}, or {deal} for deal routes
    actor: str  # "poster" or "opener"
    success: int
    json: dict[str, Any] | None = None
    idempotent: bool = False  # Idempotency-Key required

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class Scene:
    market: Market
    ids: dict[str, str] = field(default_factory=dict)

    def party(self, route: Route) -> Agent:
        return self.market.poster if route.actor == "poster" else self.market.opener


# The credential sent; None sends the acting party's own key after its account is disabled.
CREDENTIALS = [
    pytest.param({}, 401, "unauthorized", id="no-key"),
    pytest.param({"x-api-key": UNKNOWN_KEY}, 401, "unauthorized", id="unknown-key"),
    pytest.param(None, 403, "api_key_disabled", id="disabled-account"),
]


def database_rows(app) -> dict[str, list[str]]:
    """Every row of every table, so a test can show a refused request changed nothing."""
    with app.state.context.db.reader() as session:
        tables = MetaData()
        tables.reflect(bind=session.connection())
        return {
            name: sorted(repr(tuple(row)) for row in session.execute(select(table)))
            for name, table in tables.tables.items()
        }


def set_status(app, agent: Agent, status: str) -> None:
    with app.state.context.db.writer() as session:
        session.get(Account, agent.account_id).status = status
        session.commit()


def call(client, scene: Scene, route: Route, credential: dict[str, str], key: str):
    headers = dict(credential)
    if route.idempotent:
        headers["Idempotency-Key"] = key  # present, so only the credential is at fault
    return client.request(
        route.method, route.path.format(**scene.ids), headers=headers, json=route.json
    )


def check_refused_then_accepted(
    app,
    client,
    scene: Scene,
    route: Route,
    credential: dict[str, str] | None,
    status: int,
    reason: str,
) -> None:
    party = scene.party(route)
    if credential is None:
        set_status(app, party, "inactive")
        credential = party.headers
    key = new_key()
    before = database_rows(app)

    assert_problem(call(client, scene, route, credential, key), status, reason)

    assert database_rows(app) == before
    set_status(app, party, "active")
    accepted = call(client, scene, route, party.headers, key)
    assert accepted.status_code == route.success, accepted.text
