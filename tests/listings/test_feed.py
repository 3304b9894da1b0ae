from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.accounts import fund, register
from tests.support.http import assert_problem
from tests.support.market import FEE, feed_ids, post


def _post_many(client, agent, count, **fields):
    ids = []
    for i in range(count):
        response = post(client, agent, title=f"Listing {i}", **fields)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


def test_the_feed_is_newest_first_without_bodies(client, seller):
    ids = _post_many(client, seller, 3)
    page = client.get("/v1/feed", headers=seller.headers).json()
    assert [item["id"] for item in page["listings"]] == ids[::-1]
    assert "next_cursor" not in page
    for item in page["listings"]:
        assert "body" not in item
        assert item["seller_avg_rating"] == 5.0
        assert item["status"] == "live"


def test_pages_default_to_twenty_and_walk_without_gaps_or_duplicates(client, seller):
    ids = _post_many(client, seller, 45)
    first = client.get("/v1/feed", headers=seller.headers).json()
    assert len(first["listings"]) == 20
    walked = feed_ids(client, seller)
    assert walked == ids[::-1]


def test_inserts_between_pages_cause_no_duplicates_or_gaps(client, seller):
    ids = _post_many(client, seller, 6)
    first = client.get("/v1/feed", params={"limit": 4}, headers=seller.headers).json()
    _post_many(client, seller, 3)  # newer listings arrive while the client pages
    rest = client.get(
        "/v1/feed", params={"limit": 4, "cursor": first["next_cursor"]}, headers=seller.headers
    ).json()
    got = [item["id"] for item in first["listings"] + rest["listings"]]
    assert got == ids[::-1]


@pytest.mark.parametrize("limit", [0, 101, -3, "ten"])
def test_an_out_of_range_limit_is_refused_not_clamped(client, seller, limit):
    body = assert_problem(
        client.get("/v1/feed", params={"limit": limit}, headers=seller.headers),
        400,
        "invalid_input",
    )
    assert "limit" in body["detail"]


def test_the_maximum_page_is_one_hundred(client, seller):
    _post_many(client, seller, 3)
    page = client.get("/v1/feed", params={"limit": 100}, headers=seller.headers)
    assert page.status_code == 200
    assert len(page.json()["listings"]) == 3


def test_filters_by_folded_category_and_type(client, seller):
    code = _post_many(client, seller, 2, category="code_generation")
    buy = _post_many(client, seller, 2, category="translation", listing_type="buy")
    _post_many(client, seller, 2, category="translation")
    by_category = feed_ids(client, seller, category="Code Gen")
    assert by_category == code[::-1]
    by_type = feed_ids(client, seller, type="buy")
    assert by_type == buy[::-1]
    both = feed_ids(client, seller, type="sell", category="translation")
    assert len(both) == 2 and not set(both) & set(buy)


def test_bad_filters_and_cursors_are_refused(client, seller):
    assert_problem(
        client.get("/v1/feed", params={"type": "rent"}, headers=seller.headers),
        400,
        "invalid_input",
    )
    body = assert_problem(
        client.get("/v1/feed", params={"category": "astrology"}, headers=seller.headers),
        400,
        "invalid_input",
    )
    assert "web_scraping" in body["detail"]
    assert_problem(
        client.get("/v1/feed", params={"cursor": "garbage!"}, headers=seller.headers),
        400,
        "invalid_input",
    )


def test_the_feed_needs_a_key(client):
    assert_problem(client.get("/v1/feed"), 401, "unauthorized")


def test_seller_fields_follow_the_posters_role_facet(client, seller):
    reader = register(client)
    _post_many(client, seller, 1, listing_type="buy")
    item = client.get("/v1/feed", headers=reader.headers).json()["listings"][0]
    assert item["seller_rating_count"] == 1
    assert item["seller_finalized_count"] == 0
    assert item["seller_funded"] is True
    assert item["seller_warm_start"] is True


# --- GET /v1/listings/mine ------------------------------------------------------------


def test_my_listings_are_newest_first_with_bodies_and_every_status(app, client, seller):
    from agent_broker import clock as broker_clock

    ids = []
    for n in range(3):
        response = post(client, seller, title=f"Listing {n}")
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
        broker_clock.advance(timedelta(seconds=1))
    other = register(client)
    fund(app, other.account_id, 10 * FEE, real_money=True)
    assert post(client, other).status_code == 201
    broker_clock.advance(timedelta(days=8))  # the first three expire

    page = client.get("/v1/listings/mine", headers=seller.headers)
    assert page.status_code == 200, page.text
    listings = page.json()["listings"]
    assert [item["id"] for item in listings] == ids[::-1]
    assert {item["status"] for item in listings} == {"expired"}
    assert all("body" in item for item in listings)
    assert "next_cursor" not in page.json()

    first = client.get("/v1/listings/mine?limit=2", headers=seller.headers).json()
    assert [item["id"] for item in first["listings"]] == ids[:0:-1]
    rest = client.get(
        f"/v1/listings/mine?limit=2&cursor={first['next_cursor']}", headers=seller.headers
    ).json()
    assert [item["id"] for item in rest["listings"]] == ids[:1]


def test_my_listings_need_a_key(client):
    assert_problem(client.get("/v1/listings/mine"), 401, "unauthorized")


def test_my_listings_is_declared_in_the_openapi_document(client):
    document = client.get("/openapi.json").json()
    assert "get" in document["paths"]["/v1/listings/mine"]
