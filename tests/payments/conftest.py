"""Both processors configured against local fakes of their APIs; callbacks are delivered
by the tests as the processors would, processor_b's from 127.0.0.1 (its source list)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker.ledger.models import JournalEntry, Posting
from tests.helpers import Agent
from tests.payments.fakes import FakeProcessors, fake_processors

WEBHOOK_SECRET = "whsec-test-0123456789abcdef"
FORWARD_TO = "0x" + "f0" * 20
# processor_b's callbacks come from here (TestClient's client address in these tests).
SOURCE = ("127.0.0.1", 50000)


@pytest.fixture
def processors() -> Iterator[FakeProcessors]:
    with fake_processors() as fake:
        yield fake


@pytest.fixture
def payment_settings(processors: FakeProcessors) -> dict[str, Any]:
    return {
        "processor_a_api_url": processors.base_url,
        "processor_a_api_key": "processor-a-api-key",
        "processor_a_webhook_secret": WEBHOOK_SECRET,
        "processor_b_api_url": processors.base_url,
        "processor_b_callback_sources": "127.0.0.1/32",
        "processor_b_address_usdtpolygon": FORWARD_TO,
        "processor_b_address_usdcpolygon": FORWARD_TO,
        "processor_b_address_usdterc20": FORWARD_TO,
        "processor_b_address_usdc": FORWARD_TO,
        "processor_b_address_usdttrc20": "T" + "f" * 33,
        "processor_b_address_usdcsol": "So1" + "f" * 40,
        "processor_b_address_usdcbase": FORWARD_TO,
    }


@pytest.fixture
def make_payments_app(
    make_app: Callable[..., FastAPI], payment_settings: dict[str, Any]
) -> Callable[..., FastAPI]:
    def build(**overrides: Any) -> FastAPI:
        return make_app(**{**payment_settings, **overrides})

    return build


@pytest.fixture
def app(make_payments_app: Callable[..., FastAPI]) -> FastAPI:
    return make_payments_app()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False, client=SOURCE) as test_client:
        yield test_client


def account(client: TestClient, agent: Agent) -> dict[str, Any]:
    response = client.get("/v1/account", headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()


def balance(client: TestClient, agent: Agent) -> int:
    return account(client, agent)["balance_micro"]


def funded(client: TestClient, agent: Agent) -> bool:
    return account(client, agent)["reputation"]["funded"]


def journal_payments(app: FastAPI, processor: str) -> list[dict[str, Any]]:
    """The processor's payment journal entries, oldest first, with their postings."""
    with app.state.db.reader() as session:
        entries = session.scalars(
            select(JournalEntry)
            .where(JournalEntry.kind == f"{processor}_payment")
            .order_by(JournalEntry.sequence)
        ).all()
        return [
            {
                "reference": entry.reference,
                "real_money": entry.real_money,
                "memo": entry.memo,
                "postings": sorted(
                    (p.account_code, p.amount_micro)
                    for p in session.scalars(
                        select(Posting).where(Posting.entry_sequence == entry.sequence)
                    )
                ),
            }
            for entry in entries
        ]
