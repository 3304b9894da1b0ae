"""Concurrent deliveries of one callback through a real server, on both databases: the
inbox row unique on the processor's event, not the order the requests happen to arrive
in, keeps the credit to once. On PostgreSQL the server runs its database work on threads
(BROKER_DB_DISPATCH=threads, as one worker would need several at once to race), and every
racing request is held inside its write transaction, just before it records the event,
until all of them got there, so the transactions really do overlap; on SQLite writers of
one process take turns by design (agent_broker.db.dispatch) and the race is run as it
comes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry, Posting
from agent_broker.payments import callbacks
from agent_broker.payments.models import Invoice, ProcessorEvent
from tests.support.accounts import read_account, register
from tests.support.payments import WEBHOOK_SECRET, bought
from tests.support.processors import FakeProcessors, processor_a_callback, processor_b_callback
from tests.support.settings import PUBLIC_BASE_URL as BASE

RACERS = 20
HELD = 20.0  # the longest a racer waits for the others at the hold (never reached)


@pytest.fixture
def app(make_payments_app: Callable[..., FastAPI]) -> FastAPI:
    # Room for every racer's session at once on PostgreSQL, each on a thread of its own
    # (inline, a worker's writers would take turns: holding one would stop the server).
    return make_payments_app(db_pool_size=RACERS + 2, db_dispatch="threads")


class Hold:
    """Holds each delivery inside its transaction, just before the event is recorded,
    until `parties` of them are there (PostgreSQL only: on SQLite the work runs on the
    event loop, one writer at a time, and holding it would stop the server)."""

    def __init__(self, parties: int, enabled: bool) -> None:
        self.enabled = enabled
        self.barrier = threading.Barrier(parties, timeout=HELD)
        self.arrived = 0
        self.broken = False
        self._lock = threading.Lock()

    def wrap(self, receive: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.arrived += 1
            if self.enabled:
                try:
                    self.barrier.wait()
                except threading.BrokenBarrierError:
                    self.broken = True
            return receive(*args, **kwargs)

        return held


@pytest.fixture
def hold(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], Hold]:
    def install(parties: int) -> Hold:
        made = Hold(parties, enabled=not app.state.context.settings.is_sqlite)
        monkeypatch.setattr(callbacks, "receive", made.wrap(callbacks.receive))
        return made

    return install


@pytest.fixture
def http(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=60) as client:
        yield client


def race(base_url: str, requests: list[Callable[[httpx.Client], httpx.Response]]):
    """Send every request at once, each from its own thread and connection."""
    start = threading.Barrier(len(requests), timeout=HELD)

    def send(request: Callable[[httpx.Client], httpx.Response]) -> httpx.Response:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            start.wait()
            return request(client)

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return list(pool.map(send, requests))


def invoice_id(app: FastAPI, processor_id: str) -> str:
    with app.state.context.db.reader() as session:
        return session.scalar(select(Invoice.id).where(Invoice.processor_id == processor_id))


def ledger(app: FastAPI, kind: str, account_id: str) -> list[tuple[str | None, bool, int]]:
    """(reference, real money, amount paid into the wallet) of each `kind` entry."""
    with app.state.context.db.reader() as session:
        rows = session.execute(
            select(JournalEntry.reference, JournalEntry.real_money, Posting.amount_micro)
            .join(Posting, Posting.entry_sequence == JournalEntry.sequence)
            .where(
                JournalEntry.kind == kind,
                Posting.account_code == books.wallet_code(account_id),
            )
            .order_by(JournalEntry.sequence)
        ).all()
    return [(r.reference, bool(r.real_money), int(r.amount_micro)) for r in rows]


def event_count(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return int(session.scalar(select(func.count()).select_from(ProcessorEvent)))


def test_a_paid_callback_delivered_20_times_at_once_credits_once(
    app, live_server, http, processors: FakeProcessors, hold
):
    agent = register(http)
    charge_id = bought(http, agent, processor="processor_a", pack_count=4)["processor_id"]
    invoice = invoice_id(app, charge_id)
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    held = hold(RACERS)

    responses = race(
        live_server,
        [lambda c: c.post("/webhooks/processor-a", content=body, headers=headers)] * RACERS,
    )

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * (RACERS - 1), [r.text for r in responses]
    (winner,) = [r for r in responses if r.status_code == 200]
    assert winner.json() == {"received": True, "credited_micro": 2_000_000}
    for loser in (r for r in responses if r.status_code == 409):
        assert loser.headers["content-type"].startswith("application/problem+json")
        assert loser.json()["reason"] == "invoice_already_consumed"
    assert held.arrived == RACERS and not held.broken
    assert ledger(app, "processor_a_payment", agent.account_id) == [(invoice, True, 2_000_000)]
    assert event_count(app) == 1
    state = read_account(http, agent)
    assert state["balance_micro"] == 2_000_000
    assert state["reputation"]["funded"] is True


def test_a_confirmed_payment_delivered_20_times_at_once_credits_once(
    app, live_server, http, processors: FakeProcessors, hold
):
    agent = register(http)
    address = bought(http, agent, processor="processor_b", pack_count=3)["processor_id"]
    invoice = invoice_id(app, address)
    callback = processors.addresses[address]["callback"].removeprefix(BASE)
    fields = processor_b_callback(address, "payment-1", "1.70")
    held = hold(RACERS)

    responses = race(live_server, [lambda c: c.post(callback, data=fields)] * RACERS)

    assert [(r.status_code, r.text) for r in responses] == [(200, "*ok*")] * RACERS
    assert held.arrived == RACERS and not held.broken
    assert ledger(app, "processor_b_payment", agent.account_id) == [(invoice, True, 1_500_000)]
    assert event_count(app) == 1
    state = read_account(http, agent)
    assert state["balance_micro"] == 1_500_000
    assert state["reputation"]["funded"] is True


def test_distinct_payments_to_one_address_at_once_are_all_credited(
    app, live_server, http, processors: FakeProcessors, hold
):
    """No lost update: ten payments (ten uuids) to one address, each delivered twice, all
    at once, credit ten times into the one wallet and the one invoice."""
    payments = 10
    agent = register(http)
    address = bought(http, agent, processor="processor_b", pack_count=1)["processor_id"]
    invoice = invoice_id(app, address)
    callback = processors.addresses[address]["callback"].removeprefix(BASE)
    deliveries = [processor_b_callback(address, f"payment-{n}", "0.5") for n in range(payments)] * 2
    held = hold(len(deliveries))

    responses = race(
        live_server,
        [lambda c, fields=fields: c.post(callback, data=fields) for fields in deliveries],
    )

    assert [(r.status_code, r.text) for r in responses] == [(200, "*ok*")] * len(deliveries)
    assert held.arrived == len(deliveries) and not held.broken
    assert (
        ledger(app, "processor_b_payment", agent.account_id)
        == [(invoice, True, 500_000)] * payments
    )
    assert event_count(app) == payments
    assert read_account(http, agent)["balance_micro"] == payments * 500_000


def test_paid_callbacks_of_several_invoices_at_once_are_all_credited(
    app, live_server, http, processors: FakeProcessors, hold
):
    """Five invoices of one account, each paid callback delivered four times, all at once:
    five credits, the wallet's balance their sum."""
    agent = register(http)
    charges = [
        bought(http, agent, processor="processor_a", pack_count=n)["processor_id"]
        for n in range(1, 6)
    ]
    signed = [processor_a_callback(WEBHOOK_SECRET, charge) for charge in charges] * 4
    held = hold(len(signed))

    responses = race(
        live_server,
        [
            lambda c, body=body, headers=headers: c.post(
                "/webhooks/processor-a", content=body, headers=headers
            )
            for body, headers in signed
        ],
    )

    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 5 + [409] * 15, [r.text for r in responses]
    assert held.arrived == len(signed) and not held.broken
    credited = ledger(app, "processor_a_payment", agent.account_id)
    assert sorted(amount for _, _, amount in credited) == [n * 500_000 for n in range(1, 6)]
    assert sorted(reference for reference, _, _ in credited) == sorted(
        invoice_id(app, charge) for charge in charges
    )
    assert read_account(http, agent)["balance_micro"] == 15 * 500_000
