from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from agent_broker.listings.models import Listing
from tests.support.http import assert_problem
from tests.support.market import post

WEEK = timedelta(days=7)


def _status_in_db(app, listing_id):
    with app.state.context.db.reader() as session:
        return session.scalar(select(Listing.status).where(Listing.id == listing_id))


def test_a_listing_expires_after_seven_days_on_read_and_by_the_job(app, client, seller):
    listing = post(client, seller).json()
    clock.advance(WEEK - timedelta(seconds=1))
    assert (
        client.get(f"/v1/listings/{listing['id']}", headers=seller.headers).json()["status"]
        == "live"
    )
    clock.advance(timedelta(seconds=1))
    lazily = client.get(f"/v1/listings/{listing['id']}", headers=seller.headers).json()
    assert lazily["status"] == "expired"
    assert "expires_at" not in lazily
    assert _status_in_db(app, listing["id"]) == "live"
    assert client.get("/v1/feed", headers=seller.headers).json()["listings"] == []
    assert run_job(app.state.context, "expire-listings") == "expired 1 listings"
    assert _status_in_db(app, listing["id"]) == "expired"
    assert client.get(f"/v1/listings/{listing['id']}", headers=seller.headers).json() == lazily


def test_the_job_leaves_live_listings_alone(app, client, seller):
    old = post(client, seller).json()
    clock.advance(timedelta(days=3))
    new = post(client, seller).json()
    clock.advance(timedelta(days=4))
    assert run_job(app.state.context, "expire-listings") == "expired 1 listings"
    assert _status_in_db(app, old["id"]) == "expired"
    assert _status_in_db(app, new["id"]) == "live"
    feed = client.get("/v1/feed", headers=seller.headers).json()["listings"]
    assert [item["id"] for item in feed] == [new["id"]]


def test_listing_life_is_configurable(make_app):
    from fastapi.testclient import TestClient

    from tests.support.accounts import fund, register

    app = make_app(listing_ttl_days=1)
    with TestClient(app) as client:
        agent = register(client)
        fund(app, agent.account_id, 1_000_000, real_money=True)
        listing = post(client, agent).json()
        created = listing["expires_at"] - 86400
        assert created <= clock.now().timestamp() <= created + 5
        clock.advance(timedelta(days=1))
        assert (
            client.get(f"/v1/listings/{listing['id']}", headers=agent.headers).json()["status"]
            == "expired"
        )
        assert_problem(client.get("/v1/listings/x", headers=agent.headers), 404, "not_found")
