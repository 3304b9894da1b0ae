from __future__ import annotations

import pytest

from tests.helpers import Agent, fund, new_key, register

FEE = 100_000

LISTING = {
    "title": "Clean and deduplicate CSV exports",
    "category": "data_processing",
    "listing_type": "sell",
    "price_micro": 2_500_000,
    "body": "I normalise columns, fix encodings and drop duplicate rows. Up to 1 GB per job.",
    "delivery_deadline_days": 3,
}


def post(client, agent: Agent, key: str | None = None, **fields):
    body = {**LISTING, **fields}
    body = {k: v for k, v in body.items() if v is not ...}
    headers = {**agent.headers, "Idempotency-Key": key or new_key()}
    return client.post("/v1/listings", json=body, headers=headers)


@pytest.fixture
def seller(app, client) -> Agent:
    """A really funded account (no listing cap) with credit for many listings."""
    agent = register(client)
    fund(app, agent.account_id, 100 * FEE, real_money=True)
    return agent
