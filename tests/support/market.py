"""The marketplace as tests drive it: a listing, its feed, threads and their offers, sealed
deals and what the parties say of them afterwards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from agent_broker.listings.models import Listing
from tests.support.accounts import Agent, complete_profile, fund, register
from tests.support.http import new_key

FEE = 100_000  # a listing's posting fee
DEAL_FEE = 1_000_000  # each party's fee at finalize
FUNDS = FEE + 2 * DEAL_FEE  # a listing, and a deal fee for each side of its deal

LISTING = {
    "title": "Clean and deduplicate CSV exports",
    "category": "data_processing",
    "listing_type": "sell",
    "price_micro": 2_500_000,
    "body": "I normalise columns, fix encodings and drop duplicate rows. Up to 1 GB per job.",
    "delivery_deadline_days": 3,
}


@dataclass
class Market:
    """Two traders and a listing of the poster's (the `market` fixture)."""

    poster: Agent
    opener: Agent
    listing_id: str


def trader(app: FastAPI, client: TestClient, amount: int = 3 * DEAL_FEE) -> Agent:
    """An account with a complete profile and `amount` of real money."""
    agent = register(client)
    complete_profile(client, agent)
    fund(app, agent.account_id, amount, real_money=True)
    return agent


def post(client, agent: Agent, key: str | None = None, **fields):  # type: ignore[no-untyped-def]
    """POST /v1/listings with LISTING changed by `fields` (a field set to ... is left out)."""
    body = {**LISTING, **fields}
    body = {k: v for k, v in body.items() if v is not ...}
    headers = {**agent.headers, "Idempotency-Key": key or new_key()}
    return client.post("/v1/listings", json=body, headers=headers)


def listed(client: TestClient, agent: Agent, **fields: Any) -> str:
    """Post a listing that must be accepted: its id."""
    response = post(client, agent, **fields)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def listing_count(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(Listing)) or 0


def seller_with_listings(
    app: FastAPI, client: TestClient, count: int, **fields: Any
) -> tuple[Agent, list[str]]:
    """A trader funded for `count` listings and their deals, and the listings' ids."""
    poster = trader(app, client, amount=count * (FEE + DEAL_FEE))
    return poster, [listed(client, poster, **fields) for _ in range(count)]


def feed_ids(client: TestClient, agent: Agent, **params: Any) -> list[str]:
    """The ids of every listing the feed shows with `params`, page after page."""
    seen: list[str] = []
    cursor = None
    while True:
        query = dict(params)
        if cursor:
            query["cursor"] = cursor
        page = client.get("/v1/feed", params=query, headers=agent.headers)
        assert page.status_code == 200, page.text
        body = page.json()
        seen.extend(item["id"] for item in body["listings"])
        cursor = body.get("next_cursor")
        if not cursor:
            return seen


def open_thread(  # type: ignore[no-untyped-def]
    client, agent: Agent, listing_id: str, diff: str = "I can do it in 2 days for $2.50", key=None
):
    return client.post(
        f"/v1/listings/{listing_id}/threads",
        json={"diff": diff},
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
    )


def offer(client, agent: Agent, thread_id: str, diff: str):  # type: ignore[no-untyped-def]
    return client.post(
        f"/v1/threads/{thread_id}/offers", json={"diff": diff}, headers=agent.headers
    )


def close(client, agent: Agent, thread_id: str, key=None):  # type: ignore[no-untyped-def]
    return client.post(
        f"/v1/threads/{thread_id}/close",
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
    )


def finalize(client, agent: Agent, thread_id: str, key=None, **kwargs):  # type: ignore[no-untyped-def]
    return client.post(
        f"/v1/threads/{thread_id}/finalize",
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
        **kwargs,
    )


def seal(client: TestClient, poster: Agent, opener: Agent, listing_id: str) -> str:
    """Open a thread on the listing and finalize it at once: the deal's id."""
    thread = open_thread(client, opener, listing_id)
    assert thread.status_code == 201, thread.text
    response = finalize(client, poster, thread.json()["id"])
    assert response.status_code == 201, response.text
    return response.json()["id"]


def rate(client, agent: Agent, deal_id: str, **body: Any):  # type: ignore[no-untyped-def]
    return client.post(f"/v1/deals/{deal_id}/ratings", json=body, headers=agent.headers)


def dispute(client, agent: Agent, deal_id: str):  # type: ignore[no-untyped-def]
    return client.post(f"/v1/deals/{deal_id}/dispute", headers=agent.headers)
