"""Every thread route refuses a request without a usable key: no key or an unknown key is
401 unauthorized, the key of a disabled account is 403 api_key_disabled. A refused request
changes nothing in the database, and the same request with the party's working key then
succeeds, so the refusal came from the credential and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import MetaData, select

from agent_broker.accounts.models import Account
from tests.helpers import Agent, assert_problem, new_key
from tests.threads.conftest import Market, open_thread

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


THREAD_ROUTES = [
    Route("POST", "/v1/listings/{listing}/threads", "opener", 201, {"diff": "2 days, $2.50"}, True),
    Route("GET", "/v1/listings/{listing}/threads", "poster", 200),
    Route("GET", "/v1/threads/mine", "opener", 200),
    Route("GET", "/v1/threads/{thread}", "opener", 200),
    # A thread opens with the poster's turn.
    Route("POST", "/v1/threads/{thread}/offers", "poster", 200, {"diff": "3 days, $3.00"}),
    Route("POST", "/v1/threads/{thread}/close", "opener", 200, None, True),
    Route("POST", "/v1/threads/{thread}/finalize", "poster", 201, None, True),
]

# The credential sent; None sends the acting party's own key after its account is disabled.
# Also used by tests/deals/test_unauthenticated.py.
CREDENTIALS = [
    pytest.param({}, 401, "unauthorized", id="no-key"),
    pytest.param({"x-api-key": UNKNOWN_KEY}, 401, "unauthorized", id="unknown-key"),
    pytest.param(None, 403, "api_key_disabled", id="disabled-account"),
]


def database_rows(app) -> dict[str, list[str]]:
    """Every row of every table, so a test can show a refused request changed nothing."""
    with app.state.db.reader() as session:
        tables = MetaData()
        tables.reflect(bind=session.connection())
        return {
            name: sorted(repr(tuple(row)) for row in session.execute(select(table)))
            for name, table in tables.tables.items()
        }


def set_status(app, agent: Agent, status: str) -> None:
    with app.state.db.writer() as session:
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


@pytest.fixture
def scene(client, market: Market) -> Scene:
    opened = open_thread(client, market.opener, market.listing_id)
    assert opened.status_code == 201, opened.text
    return Scene(market, {"listing": market.listing_id, "thread": opened.json()["id"]})


@pytest.mark.parametrize(("credential", "status", "reason"), CREDENTIALS)
@pytest.mark.parametrize("route", THREAD_ROUTES, ids=lambda route: route.id)
def test_thread_routes_refuse_a_missing_unknown_or_disabled_key(
    app, client, scene: Scene, route: Route, credential, status: int, reason: str
):
    check_refused_then_accepted(app, client, scene, route, credential, status, reason)


def test_a_refused_open_creates_no_thread_and_holds_nothing(app, client, market: Market):
    response = client.post(
        f"/v1/listings/{market.listing_id}/threads",
        json={"diff": "2 days"},
        headers={"x-api-key": UNKNOWN_KEY, "Idempotency-Key": new_key()},
    )
    assert_problem(response, 401, "unauthorized")
    inbox = client.get(f"/v1/listings/{market.listing_id}/threads", headers=market.poster.headers)
    assert inbox.json() == []
    account = client.get("/v1/account", headers=market.opener.headers).json()
    assert account["held_micro"] == 0
