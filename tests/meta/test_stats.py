from __future__ import annotations

from datetime import timedelta

from agent_broker import clock
from agent_broker.categories import CATEGORIES
from agent_broker.meta.stats import MIN_DEALS
from tests.support.accounts import Agent
from tests.support.http import new_key
from tests.support.market import DEAL_FEE, post, trader


def _stats(client) -> dict:
    response = client.get("/stats.json")
    assert response.status_code == 200, response.text
    return response.json()


def _fresh(client) -> dict:
    clock.advance(timedelta(seconds=61))  # past the document's cache
    return _stats(client)


def _seal(client, poster: Agent, opener: Agent, open_for: timedelta) -> None:
    listing = post(client, poster)
    assert listing.status_code == 201, listing.text
    thread = client.post(
        f"/v1/listings/{listing.json()['id']}/threads",
        json={"diff": "I can do it in 2 days for $2.50"},
        headers={**opener.headers, "Idempotency-Key": new_key()},
    )
    assert thread.status_code == 201, thread.text
    clock.advance(open_for)
    sealed = client.post(
        f"/v1/threads/{thread.json()['id']}/finalize",
        headers={**poster.headers, "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201, sealed.text


def test_an_empty_marketplace(client):
    before = clock.rfc3339(clock.now())
    body = _stats(client)
    after = clock.rfc3339(clock.now())
    assert body["registered_agents"] == 0
    assert body["sealed_deals"] is None
    assert body["median_seal_seconds"] is None
    assert body["sealed_deals_window_days"] == 30
    assert body["median_seal_min_deals"] == MIN_DEALS == 10
    # Read within the call (a second may tick over between the two readings).
    assert before <= body["generated_at"] <= after
    live = body["live_listings"]
    assert live["total"] == 0
    assert live["by_side"] == {"buy": 0, "sell": 0}
    assert set(live["by_category"]) == set(CATEGORIES)


def test_deal_figures_are_withheld_below_the_minimum_then_published(app, client):
    poster, opener = (
        trader(app, client, amount=100 * DEAL_FEE),
        trader(app, client, amount=100 * DEAL_FEE),
    )
    # Seal times of 1, 2, ..., 9 minutes.
    for minutes in range(1, MIN_DEALS):
        _seal(client, poster, opener, timedelta(minutes=minutes))
    body = _fresh(client)
    assert body["registered_agents"] == 2
    assert body["sealed_deals"] is None  # withheld, not 0
    assert body["median_seal_seconds"] is None
    _seal(client, poster, opener, timedelta(minutes=30))
    body = _fresh(client)
    assert body["sealed_deals"] == MIN_DEALS
    # Ten durations 60..540 s and 1800 s: the median is (300 + 360) / 2.
    assert body["median_seal_seconds"] == 330


def test_only_deals_of_the_last_30_days_count(app, client):
    poster, opener = (
        trader(app, client, amount=100 * DEAL_FEE),
        trader(app, client, amount=100 * DEAL_FEE),
    )
    for _ in range(MIN_DEALS):
        _seal(client, poster, opener, timedelta(seconds=10))
    assert _fresh(client)["sealed_deals"] == MIN_DEALS
    clock.advance(timedelta(days=29, hours=23))
    _seal(client, poster, opener, timedelta(seconds=10))
    assert _fresh(client)["sealed_deals"] == MIN_DEALS + 1
    clock.advance(timedelta(hours=1))  # the first ten are now 30 days old
    body = _fresh(client)
    assert body["sealed_deals"] is None
    assert body["median_seal_seconds"] is None


def test_live_listings_by_category_and_side(app, client):
    seller = trader(app, client, amount=100 * DEAL_FEE)
    for category, side in (
        ("research", "sell"),
        ("research", "sell"),
        ("research", "buy"),
        ("translation", "buy"),
    ):
        assert post(client, seller, category=category, listing_type=side).status_code == 201
    live = _stats(client)["live_listings"]
    assert live["total"] == 4
    assert live["by_side"] == {"buy": 2, "sell": 2}
    assert live["by_category"]["research"] == {"buy": 1, "sell": 2}
    assert live["by_category"]["translation"] == {"buy": 1, "sell": 0}
    assert live["by_category"]["data_processing"] == {"buy": 0, "sell": 0}
    # A matched listing is no longer live.
    opener = trader(app, client, amount=100 * DEAL_FEE)
    _seal(client, seller, opener, timedelta(seconds=1))
    live = _fresh(client)["live_listings"]
    assert live["total"] == 4  # the sealed one was posted and matched in _seal
    # Past their 7-day life none is live, even before the expiry job has run.
    clock.advance(timedelta(days=7))
    live = _fresh(client)["live_listings"]
    assert live["total"] == 0
    assert live["by_category"]["research"] == {"buy": 0, "sell": 0}


def test_nothing_in_the_document_identifies_an_account(app, client):
    poster, opener = (
        trader(app, client, amount=100 * DEAL_FEE),
        trader(app, client, amount=100 * DEAL_FEE),
    )
    for _ in range(MIN_DEALS):
        _seal(client, poster, opener, timedelta(seconds=5))
    text = _fresh(client)
    raw = client.get("/stats.json").text
    assert text["sealed_deals"] == MIN_DEALS
    for agent in (poster, opener):
        handle = client.get("/v1/account", headers=agent.headers).json()["handle"]
        assert agent.account_id not in raw
        assert handle not in raw
        assert agent.api_key not in raw
