"""Card and crypto payments against the processors' local fakes
(tests/support/processors.py): the settings of an app that takes both, where processor_b's
callbacks come from, buying credits, and what a payment leaves behind (journal entries,
processor events, refusal log lines)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker.ledger.models import JournalEntry, Posting
from agent_broker.payments.models import ProcessorEvent
from tests.support.accounts import Agent, balance, funded

WEBHOOK_SECRET = "whsec-test-0123456789abcdef"
FORWARD_TO = "0x" + "f0" * 20
# processor_b's callbacks come from here (TestClient's client address in these tests).
SOURCE = ("127.0.0.1", 50000)


def payment_settings_for(api_url: str) -> dict[str, Any]:
    """Both processors' settings, their APIs at `api_url`."""
    return {
        "processor_a_api_url": api_url,
        "processor_a_api_key": "processor-a-api-key",
        "processor_a_webhook_secret": WEBHOOK_SECRET,
        "processor_b_api_url": api_url,
        "processor_b_callback_sources": "127.0.0.1/32",
        "processor_b_address_usdtpolygon": FORWARD_TO,
        "processor_b_address_usdcpolygon": FORWARD_TO,
        "processor_b_address_usdterc20": FORWARD_TO,
        "processor_b_address_usdc": FORWARD_TO,
        "processor_b_address_usdttrc20": "T" + "f" * 33,
        "processor_b_address_usdcsol": "So1" + "f" * 40,
        "processor_b_address_usdcbase": FORWARD_TO,
    }


def journal_payments(app: FastAPI, processor: str) -> list[dict[str, Any]]:
    """The processor's payment journal entries, oldest first, with their postings."""
    with app.state.context.db.reader() as session:
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


def buy(client: TestClient | httpx.Client, agent: Agent | None, **body: Any) -> httpx.Response:
    """POST /dashboard/credits with `body` (pack_count, processor, chain), as `agent` or
    with no key: the answer as it came."""
    headers = agent.headers if agent else {}
    return client.post("/dashboard/credits", json=body, headers=headers)


def bought(client: TestClient | httpx.Client, agent: Agent, **body: Any) -> dict[str, Any]:
    """An invoice bought as `agent` (the purchase must succeed): the 201 body."""
    response = buy(client, agent, **body)
    assert response.status_code == 201, response.text
    return response.json()


def processor_events(app: FastAPI) -> list[tuple[str, str, int]]:
    """Every processor event recorded: (processor, event key, credited), sorted."""
    with app.state.context.db.reader() as session:
        return sorted(
            (e.processor, e.event_key, e.credited_micro)
            for e in session.scalars(select(ProcessorEvent))
        )


def callback_refusals(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The processor_callback_refused lines logged, as their event dicts."""
    return [
        record.msg
        for record in caplog.records
        if record.name == "agent_broker.payments"
        and isinstance(record.msg, dict)
        and record.msg.get("event") == "processor_callback_refused"
    ]


def assert_nothing_credited(app: FastAPI, client: TestClient, agent: Agent, processor: str) -> None:
    assert balance(client, agent) == 0
    assert funded(client, agent) is False
    assert journal_payments(app, processor) == []
    assert processor_events(app) == []
