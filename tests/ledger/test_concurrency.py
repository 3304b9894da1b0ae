"""Real parallel transactions against one wallet: the database, not Python, decides."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.ledger import books
from agent_broker.ledger.errors import InsufficientFunds
from agent_broker.ledger.models import Hold, JournalEntry
from agent_broker.ledger.service import charge, settle_lapsed_holds, take_hold, wallet
from tests.support.accounts import fund

WORKERS = 16


def _in_parallel(count, action):
    barrier = threading.Barrier(count)

    def attempt(_):
        barrier.wait()
        try:
            action()
        except InsufficientFunds:
            return False
        return True

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(attempt, range(count)))


def test_parallel_holds_succeed_exactly_as_many_times_as_affordable(app, open_account):
    account = open_account()
    fund(app, account, 5_500_000)  # affords five holds of 1,000,000

    def hold():
        with app.state.context.db.writer() as session:
            now = clock.now()
            take_hold(
                session, account, 1_000_000, reference="t", expires_at=now + timedelta(1), now=now
            )
            session.commit()

    outcomes = _in_parallel(WORKERS, hold)
    assert outcomes.count(True) == 5
    with app.state.context.db.writer() as session:
        view = wallet(session, account, now=clock.now())
        active = session.scalar(
            select(func.count()).select_from(Hold).where(Hold.status == "active")
        )
    assert (view.spendable_micro, view.held_micro, active) == (500_000, 5_000_000, 5)


def test_parallel_charges_never_overdraw(app, open_account):
    account = open_account()
    fund(app, account, 1_000_000)

    def pay():
        with app.state.context.db.writer() as session:
            charge(
                session, account, 300_000, sink=books.FEES, kind="t", memo="fee", now=clock.now()
            )
            session.commit()

    outcomes = _in_parallel(WORKERS, pay)
    assert outcomes.count(True) == 3
    with app.state.context.db.writer() as session:
        assert wallet(session, account, now=clock.now()).spendable_micro == 100_000
        fees = session.scalar(
            select(func.count()).select_from(JournalEntry).where(JournalEntry.kind == "t")
        )
    assert fees == 3


def test_a_lapsed_hold_is_settled_once_when_readers_race(app, open_account):
    account = open_account()
    fund(app, account, 3_000_000)
    with app.state.context.db.writer() as session:
        now = clock.now()
        for _ in range(3):
            take_hold(
                session,
                account,
                1_000_000,
                reference="t",
                expires_at=now + timedelta(minutes=1),
                now=now,
            )
        session.commit()
    clock.advance(timedelta(minutes=2))
    settled = []

    def settle():
        with app.state.context.db.writer() as session:
            settled.append(settle_lapsed_holds(session, now=clock.now(), account_id=account))
            session.commit()

    _in_parallel(8, settle)
    assert sum(settled) == 3
    with app.state.context.db.writer() as session:
        view = wallet(session, account, now=clock.now())
    assert (view.spendable_micro, view.held_micro) == (3_000_000, 0)
