"""GET /v1/feed?q=…&sort=…: words of the title or body (all of them, any case), the price
orders, and both composing with category, type and the cursor: a walk through every page
sees each match once, in order, with nothing else."""

from __future__ import annotations

import pytest

from tests.support.http import assert_problem
from tests.support.market import feed_ids, post

CORPUS = [
    (
        "Clean CSV exports",
        "Deduplicate rows and fix encodings.",
        "data_processing",
        "sell",
        3_000_000,
    ),
    (
        "Translate manuals",
        "German to English, technical CSV glossaries.",
        "translation",
        "sell",
        1_000_000,
    ),
    ("Need a scraper", "Collect prices from shops nightly.", "web_scraping", "buy", 5_000_000),
    ("Scrape job boards", "Daily CSV of new postings.", "web_scraping", "sell", 1_000_000),
    ("Summarise papers", "Weekly digest of arXiv abstracts.", "summarisation", "buy", 0),
]


@pytest.fixture
def posted(client, seller):
    ids = {}
    for title, body, category, listing_type, price in CORPUS:
        response = post(
            client,
            seller,
            title=title,
            body=body,
            category=category,
            listing_type=listing_type,
            price_micro=price,
        )
        assert response.status_code == 201, response.text
        ids[title] = response.json()["id"]
    return ids


def _titles(client, agent, ids, **params):
    by_id = {v: k for k, v in ids.items()}
    return [by_id[i] for i in feed_ids(client, agent, **params)]


def test_q_matches_words_of_the_title_or_body_in_any_case(client, seller, posted):
    assert set(_titles(client, seller, posted, q="csv")) == {
        "Clean CSV exports",
        "Translate manuals",
        "Scrape job boards",
    }
    assert _titles(client, seller, posted, q="DEDUPLICATE rows") == ["Clean CSV exports"]
    assert _titles(client, seller, posted, q="csv nightly") == []  # every word must match


def test_punctuation_and_operators_are_just_words(client, seller, posted):
    assert _titles(client, seller, posted, q='"csv" (rows*) -') == ["Clean CSV exports"]
    assert_problem(
        client.get("/v1/feed", params={"q": "!!!"}, headers=seller.headers), 400, "invalid_input"
    )


def test_search_composes_with_category_and_type(client, seller, posted):
    assert _titles(client, seller, posted, q="csv", category="web_scraping") == [
        "Scrape job boards"
    ]
    assert _titles(client, seller, posted, q="csv", type="sell", category="translation") == [
        "Translate manuals"
    ]


@pytest.mark.parametrize("limit", [1, 2, 100])
def test_price_orders_walk_every_page_in_order(client, seller, posted, limit):
    ascending = _titles(client, seller, posted, sort="price_asc", limit=limit)
    assert ascending == [
        "Summarise papers",
        "Scrape job boards",  # equal prices: newest first
        "Translate manuals",
        "Clean CSV exports",
        "Need a scraper",
    ]
    descending = _titles(client, seller, posted, sort="price_desc", limit=limit)
    assert descending == [
        "Need a scraper",
        "Clean CSV exports",
        "Scrape job boards",
        "Translate manuals",
        "Summarise papers",
    ]
    newest = _titles(client, seller, posted, limit=limit)
    assert newest == list(reversed(list(posted)))


def test_search_and_price_order_compose_with_the_cursor(client, seller, posted):
    assert _titles(client, seller, posted, q="csv", sort="price_desc", limit=1) == [
        "Clean CSV exports",
        "Scrape job boards",
        "Translate manuals",
    ]


def test_a_cursor_keeps_its_order(client, seller, posted):
    page = client.get("/v1/feed", params={"sort": "price_asc", "limit": 1}, headers=seller.headers)
    cursor = page.json()["next_cursor"]
    body = assert_problem(
        client.get("/v1/feed", params={"cursor": cursor}, headers=seller.headers),
        400,
        "invalid_input",
    )
    assert "sort" in body["detail"]
    newest = client.get("/v1/feed", params={"limit": 1}, headers=seller.headers).json()
    assert_problem(
        client.get(
            "/v1/feed",
            params={"cursor": newest["next_cursor"], "sort": "price_desc"},
            headers=seller.headers,
        ),
        400,
        "invalid_input",
    )


def test_an_unknown_sort_or_an_empty_q_is_400(client, seller):
    for params in ({"sort": "cheapest"}, {"q": ""}, {"q": "x" * 201}):
        assert_problem(
            client.get("/v1/feed", params=params, headers=seller.headers), 400, "invalid_input"
        )


def test_a_matched_or_expired_listing_leaves_search_too(app, client, seller, posted):
    from datetime import timedelta

    from agent_broker import clock

    clock.advance(timedelta(days=8))
    assert _titles(client, seller, posted, q="csv") == []
