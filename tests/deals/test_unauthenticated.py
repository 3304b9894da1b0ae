"""Every deal route refuses a request without a usable key: no key or an unknown key is 401
unauthorized, the key of a disabled account is 403 api_key_disabled. A refused request
records no rating or dispute and changes nothing else in the database, and the same
request with the party's working key then succeeds."""

from __future__ import annotations

import pytest

from tests.support.credentials import CREDENTIALS, Route, Scene, check_refused_then_accepted
from tests.support.market import Market, finalize, open_thread

DEAL_ROUTES = [
    Route("GET", "/v1/deals/{deal}", "opener", 200),
    Route("POST", "/v1/deals/{deal}/ratings", "opener", 201, {"score": 4, "delivered": True}),
    Route("POST", "/v1/deals/{deal}/dispute", "opener", 201),
]


@pytest.fixture
def scene(client, market: Market) -> Scene:
    thread = open_thread(client, market.opener, market.listing_id).json()["id"]
    sealed = finalize(client, market.poster, thread)
    assert sealed.status_code == 201, sealed.text
    return Scene(market, {"deal": sealed.json()["id"]})


@pytest.mark.parametrize(("credential", "status", "reason"), CREDENTIALS)
@pytest.mark.parametrize("route", DEAL_ROUTES, ids=lambda route: route.id)
def test_deal_routes_refuse_a_missing_unknown_or_disabled_key(
    app, client, scene: Scene, route: Route, credential, status: int, reason: str
):
    check_refused_then_accepted(app, client, scene, route, credential, status, reason)
