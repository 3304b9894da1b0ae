from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import run_job
from agent_broker.ledger import books
from agent_broker.ledger.errors import HoldNotCapturable, InsufficientFunds
from agent_broker.ledger.models import JournalEntry
from agent_broker.ledger.service import (
    capture_hold,
    credit,
    release_hold,
    take_hold,
    wallet,
)
from tests.support.accounts import fund

DAY = timedelta(days=1)


def _hold(app, account, amount, ttl=DAY):
    with app.state.context.db.writer() as session:
        now = clock.now()
        hold_id = take_hold(
            session, account, amount, reference="thread-1", expires_at=now + ttl, now=now
        )
        session.commit()
        return hold_id


def _view(app, account):
    with app.state.context.db.writer() as session:
        view = wallet(session, account, now=clock.now())
        session.commit()
        return view


def _journal_size(app):
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(JournalEntry))


def test_a_hold_moves_money_from_spendable_to_held_without_a_journal_entry(app, open_account):
    account = open_account()
    fund(app, account, 3_000_000)
    entries = _journal_size(app)
    _hold(app, account, 1_000_000)
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (2_000_000, 1_000_000)
    assert _journal_size(app) == entries


def test_a_hold_beyond_spendable_is_refused(app, open_account):
    account = open_account()
    fund(app, account, 1_500_000)
    _hold(app, account, 1_000_000)
    with pytest.raises(InsufficientFunds):
        _hold(app, account, 1_000_000)
    assert _view(app, account).held_micro == 1_000_000


def test_release_gives_the_hold_back_once(app, open_account):
    account = open_account()
    fund(app, account, 1_000_000)
    hold = _hold(app, account, 1_000_000)
    with app.state.context.db.writer() as session:
        assert release_hold(session, hold, now=clock.now()) is True
        assert release_hold(session, hold, now=clock.now()) is False
        session.commit()
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (1_000_000, 0)


def test_capture_journals_the_fee_and_cannot_happen_twice(app, open_account):
    account = open_account()
    fund(app, account, 1_200_000)
    hold = _hold(app, account, 1_000_000)
    with app.state.context.db.writer() as session:
        capture_hold(session, hold, sink=books.FEES, kind="deal_fee", memo="fee", now=clock.now())
        session.commit()
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (200_000, 0)
    with app.state.context.db.writer() as session, pytest.raises(HoldNotCapturable):
        capture_hold(session, hold, sink=books.FEES, kind="deal_fee", memo="fee", now=clock.now())
    with app.state.context.db.writer() as session, pytest.raises(HoldNotCapturable):
        release_hold(session, hold, now=clock.now()) or capture_hold(
            session, hold, sink=books.FEES, kind="x", memo="x", now=clock.now()
        )


def test_a_capture_naming_a_wallet_the_hold_is_not_on_moves_nothing(app, open_account):
    account, other = open_account(), open_account()
    fund(app, account, 1_000_000)
    hold = _hold(app, account, 1_000_000)

    def capture(session, locked_account):  # noqa: ANN001, ANN202
        capture_hold(
            session,
            hold,
            sink=books.FEES,
            kind="deal_fee",
            memo="fee",
            now=clock.now(),
            locked_wallet=books.wallet_code(locked_account),
        )

    with (
        app.state.context.db.writer() as session,
        pytest.raises(RuntimeError, match="did not lock"),
    ):
        capture(session, other)
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (0, 1_000_000)
    with app.state.context.db.writer() as session:  # the wallet it is on: captured
        capture(session, account)
        session.commit()
    assert _view(app, account).held_micro == 0


def test_a_lapsed_hold_is_back_on_the_next_read_and_cannot_be_captured(app, open_account):
    account = open_account()
    fund(app, account, 1_000_000)
    hold = _hold(app, account, 1_000_000, ttl=timedelta(hours=1))
    assert _view(app, account).spendable_micro == 0
    clock.advance(timedelta(hours=1, seconds=1))
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (1_000_000, 0)
    with app.state.context.db.writer() as session, pytest.raises(HoldNotCapturable):
        capture_hold(session, hold, sink=books.FEES, kind="x", memo="x", now=clock.now())


def test_the_expiry_job_and_the_lazy_read_agree(app, open_account):
    account = open_account()
    fund(app, account, 2_000_000)
    _hold(app, account, 1_000_000, ttl=timedelta(minutes=30))
    _hold(app, account, 500_000, ttl=timedelta(hours=3))
    clock.advance(timedelta(hours=1))
    outcome = run_job(app.state.context, "expire-holds")
    assert outcome == "settled 1 lapsed holds"
    view = _view(app, account)  # the lazy read finds nothing more to settle
    assert (view.spendable_micro, view.held_micro) == (1_500_000, 500_000)
    assert run_job(app.state.context, "expire-holds") == "settled 0 lapsed holds"
    assert "expire-holds" in JOBS


def test_holds_and_debits_only_touch_spendable_money(app, open_account):
    account = open_account()
    with app.state.context.db.writer() as session:
        credit(
            session, account, 1_000_000, source=books.OPERATOR, kind="t", memo="in", now=clock.now()
        )
        session.commit()
    _hold(app, account, 800_000)
    from agent_broker.ledger.service import charge

    with app.state.context.db.writer() as session, pytest.raises(InsufficientFunds):
        charge(session, account, 300_000, sink=books.FEES, kind="t", memo="fee", now=clock.now())


def _hold_status(app, hold_id):
    from agent_broker.ledger.models import Hold

    with app.state.context.db.reader() as session:
        return session.get(Hold, hold_id).status


def test_a_charge_short_of_money_only_while_a_hold_has_lapsed_settles_it_and_goes_through(
    app, open_account
):
    from agent_broker.ledger.service import charge

    account = open_account()
    fund(app, account, 1_000_000)
    hold = _hold(app, account, 1_000_000, ttl=timedelta(hours=1))
    clock.advance(timedelta(hours=1, seconds=1))
    with app.state.context.db.writer() as session:
        charge(session, account, 1_000_000, sink=books.FEES, kind="t", memo="fee", now=clock.now())
        session.commit()
    assert _hold_status(app, hold) == "lapsed"
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (0, 0)


def test_a_hold_short_of_money_only_while_another_has_lapsed_settles_it_and_is_taken(
    app, open_account
):
    account = open_account()
    fund(app, account, 1_000_000)
    first = _hold(app, account, 1_000_000, ttl=timedelta(hours=1))
    clock.advance(timedelta(hours=1, seconds=1))
    second = _hold(app, account, 1_000_000)
    assert (_hold_status(app, first), _hold_status(app, second)) == ("lapsed", "active")
    view = _view(app, account)
    assert (view.spendable_micro, view.held_micro) == (0, 1_000_000)
    with app.state.context.db.writer() as session, pytest.raises(InsufficientFunds):
        take_hold(session, account, 1, reference="t", expires_at=clock.now() + DAY, now=clock.now())
