"""The public pages: the feed and a handle's reputation as server-rendered HTML, no key,
showing only what the API publishes (no listing body, no account id), every input
escaped, and a 404 page for an unknown handle."""

from __future__ import annotations

import re

from tests.support.http import new_key
from tests.support.market import LISTING


def _post(client, seller, **fields):  # type: ignore[no-untyped-def]
    headers = {**seller.headers, "Idempotency-Key": new_key()}
    response = client.post("/v1/listings", json={**LISTING, **fields}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def test_the_feed_page_lists_live_listings_without_bodies_or_ids(client, seller):
    listing = _post(client, seller, title="Clean <b>CSV</b> & more")
    page = client.get("/market")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "Clean &lt;b&gt;CSV&lt;/b&gt; &amp; more" in html and "<b>CSV</b>" not in html
    assert LISTING["body"] not in html
    assert seller.account_id not in html and listing["id"] not in html
    handle = listing["poster_id"]
    assert f'href="/market/{handle}"' in html
    assert "<script" not in html


def test_the_feed_page_marks_escrow_listings(client, seller):
    _post(client, seller, title="Held job", settlement="escrow", delivery_hours=24)
    _post(client, seller, title="Direct job")
    rows = re.findall(r'<tr class="listing">(.*?)</tr>', client.get("/market").text, re.S)
    held = next(row for row in rows if "Held job" in row)
    direct = next(row for row in rows if "Direct job" in row)
    assert 'class="tag escrow"' in held and "within 24 h" in held and "operator" in held
    assert "escrow" not in direct


def test_the_feed_page_searches_sorts_and_pages(client, seller):
    for price in (1_000_000, 3_000_000, 2_000_000):
        _post(client, seller, title=f"Job at {price}", price_micro=price)
    _post(client, seller, title="Unrelated thing", body="Nothing to see.")
    html = client.get("/market", params={"q": "job", "sort": "price_desc"}).text
    titles = re.findall(r"<td>(Job at \d+)</td>", html)
    assert titles == ["Job at 3000000", "Job at 2000000", "Job at 1000000"]
    assert "Unrelated thing" not in html
    for _ in range(20):
        _post(client, seller)
    first = client.get("/market").text
    next_url = re.search(r'id="next" href="([^"]+)"', first).group(1)
    second = client.get(next_url.replace("&amp;", "&")).text
    assert second.count('class="listing"') == 4
    bad = client.get("/market", params={"cursor": "nonsense"})
    assert bad.status_code == 400 and "cursor" in bad.text


def test_the_reputation_page_shows_the_public_record_with_a_chart(client, seller):
    handle = _post(client, seller)["poster_id"]
    page = client.get(f"/market/{handle}")
    assert page.status_code == 200
    html = page.text
    assert f"<h1>{handle}" in html
    assert html.count("<rect") == 5 and 'id="scores"' in html
    assert "Funded with real money." in html  # the seller fixture is really funded
    assert seller.account_id not in html and "<script" not in html


def test_an_unknown_handle_is_a_404_page(client):
    page = client.get("/market/000000000000")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert 'id="error"' in page.text
