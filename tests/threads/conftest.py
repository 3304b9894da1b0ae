from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.helpers import Agent, complete_profile, fund, new_key, register
from tests.listings.conftest import FEE, post

DEAL_FEE = 1_000_000


@dataclass
class Market:
    poster: Agent
    opener: Agent
    listing_id: str


def open_thread(
    client, agent: Agent, listing_id: str, diff: str = "I can do it in 2 days for $2.50", key=None
):
    return client.post(
        f"/v1/listings/{listing_id}/threads",
        json={"diff": diff},
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
    )


def offer(client, agent: Agent, thread_id: str, diff: str):
    return client.post(
        f"/v1/threads/{thread_id}/offers", json={"diff": diff}, headers=agent.headers
    )


def close(client, agent: Agent, thread_id: str, key=None):
    return client.post(
        f"/v1/threads/{thread_id}/close",
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
    )


def balance(client, agent: Agent) -> tuple[int, int]:
    body = client.get("/v1/account", headers=agent.headers).json()
    return body["balance_micro"], body["held_micro"]


def trader(app, client, amount: int = 3 * DEAL_FEE) -> Agent:
    agent = register(client)
    complete_profile(client, agent)
    fund(app, agent.account_id, amount, real_money=True)
    return agent


@pytest.fixture
def market(app, client) -> Market:
    poster = trader(app, client, amount=10 * FEE + 5 * DEAL_FEE)
    listing = post(client, poster)
    assert listing.status_code == 201, listing.text
    return Market(poster=poster, opener=trader(app, client), listing_id=listing.json()["id"])
