"""Every thread route refuses a request without a usable key: no key or an unknown key is
401 unauthorized, the key of a disabled account is 403 api_key_disabled. A refused request
changes nothing in the database, and the same request with the party's working key then
succeeds, so the refusal came from the credential and nothing else."""

from __future__ import annotations

import pytest

from tests.support.credentials import (
    CREDENTIALS,
    UNKNOWN_KEY,
    Route,
    Scene,
    check_refused_then_accepted,
)
from tests.support.http import assert_problem, new_key
from tests.support.market import Market, open_thread

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
