"""Reconciliation in the verdict: wallet balances against the journal, held amounts
against the active holds, and thread holds against the threads' states."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import select, text

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from agent_broker.ledger import books
from agent_broker.ledger.audit import audit
from agent_broker.ledger.models import Hold
from agent_broker.ledger.reconciliation import CLOCK_TOLERANCE
from agent_broker.ledger.service import take_hold
from tests.support.accounts import fund
from tests.support.http import new_key
from tests.support.ledger import journal, run_sealer, seal_now
from tests.support.market import DEAL_FEE, close, open_thread, post, trader

PATH = "/v1/ledger/verify"


def _sql(app, statement: str, **params: object) -> None:
    """Change a row the way a stray script or a bug would (these tables have no
    append-only triggers)."""
    with app.state.context.db.engine.begin() as conn:
        conn.execute(text(statement), params)


def _found(app) -> list[tuple[int | None, str, str]]:
    found = audit(app.state.context.db.engine, reveal_ids=True).found
    return [(p.sequence, p.kind, p.detail) for p in found.problems]


def _kinds(app) -> list[tuple[int | None, str]]:
    return [(sequence, kind) for sequence, kind, _ in _found(app)]


def _thread(client, app) -> tuple[str, str]:
    """A listing and an open thread on it; (thread id, hold id)."""
    poster = trader(app, client, amount=10 * DEAL_FEE)
    listing = post(client, poster)
    assert listing.status_code == 201, listing.text
    opened = open_thread(client, trader(app, client), listing.json()["id"])
    assert opened.status_code == 201, opened.text
    thread_id = opened.json()["id"]
    with app.state.context.db.reader() as session:
        hold_id = session.scalar(
            text("SELECT hold_id FROM threads WHERE id = :t"), {"t": thread_id}
        )
    return thread_id, hold_id


# --- a consistent ledger ----------------------------------------------------------------


def test_a_ledger_moved_only_by_the_service_reconciles(client, app):
    """Fees charged, holds taken, released and captured, threads open, rejected, sealed
    and auto-closed: nothing to report."""
    poster = trader(app, client, amount=10 * DEAL_FEE)
    sealed_listing, other_listing = (post(client, poster).json()["id"] for _ in range(2))
    winner, loser, rejecter = (trader(app, client) for _ in range(3))
    won = open_thread(client, winner, sealed_listing).json()["id"]
    open_thread(client, loser, sealed_listing)  # auto-closed by the seal
    rejected = open_thread(client, rejecter, other_listing).json()["id"]
    assert close(client, rejecter, rejected).status_code == 200
    open_thread(client, trader(app, client), other_listing)  # stays open
    sealed = client.post(
        f"/v1/threads/{won}/finalize", headers={**poster.headers, "Idempotency-Key": new_key()}
    )
    assert sealed.status_code == 201, sealed.text
    with app.state.context.db.reader() as session:
        states = session.execute(
            text("SELECT t.status, h.status FROM threads t JOIN ledger_holds h ON h.id = t.hold_id")
        ).all()
    assert sorted(tuple(row) for row in states) == [
        ("closed", "released"),
        ("finalized", "captured"),
        ("open", "active"),
        ("rejected", "released"),
    ]
    journal(app, 2)  # system books: no running total is kept for them
    run = seal_now(app)
    assert (run.status, run.problem_count) == ("ok", 0)
    body = client.get(PATH).json()
    assert (body["status"], body["problems"]) == ("ok", [])
    assert "its held amount the sum of its active holds" in body["scope"]


def test_lapse_settled_lazily_on_either_side_is_not_a_mismatch(client, app):
    thread_id, _ = _thread(client, app)
    # Past the thread's life: the thread is still `open`, its hold still `active`.
    clock.advance(timedelta(days=8))
    assert _found(app) == []
    # The expiry job closed the thread; the hold has not been given back yet.
    run_job(app.state.context, "expire-threads")
    assert _found(app) == []
    run_job(app.state.context, "expire-holds")
    assert _found(app) == []
    with app.state.context.db.reader() as session:
        states = session.execute(
            text(
                "SELECT t.status, h.status FROM threads t JOIN ledger_holds h"
                " ON h.id = t.hold_id WHERE t.id = :t"
            ),
            {"t": thread_id},
        ).one()
    assert tuple(states) == ("closed", "lapsed")


def test_a_hold_lapsed_before_its_thread_was_closed_is_not_a_mismatch(client, app):
    _thread(client, app)
    clock.advance(timedelta(days=8))
    run_job(app.state.context, "expire-holds")  # thread still `open`
    assert _found(app) == []


# --- balances ---------------------------------------------------------------------------


def test_a_wallet_total_that_differs_from_its_postings_is_reported(client, app, open_account):
    account = open_account()
    code = books.wallet_code(account)
    fund(app, account, 3_000_000)
    seal_now(app)
    _sql(app, "UPDATE ledger_accounts SET total_micro = total_micro + 1 WHERE code = :c", c=code)
    run = run_sealer(app)
    assert (run.status, run.problem_count) == ("broken", 1)
    body = client.get(PATH).json()
    assert body["status"] == "broken"
    # The public verdict names the wallet by a digest, never by the private account id.
    ref = "ref " + hashlib.sha256(code.encode()).hexdigest()[:12]
    assert body["problems"] == [
        {
            "sequence": None,
            "kind": "balance_mismatch",
            "detail": f"the balance of wallet {ref} differs from the sum of its journal postings",
        }
    ]
    assert account not in client.get(PATH).text


def test_a_wallet_without_postings_must_hold_nothing(app, open_account):
    account = open_account()
    _sql(
        app,
        "UPDATE ledger_accounts SET total_micro = 5 WHERE code = :c",
        c=books.wallet_code(account),
    )
    assert _kinds(app) == [(None, "balance_mismatch")]


# --- held amounts -----------------------------------------------------------------------


def test_a_held_amount_that_differs_from_the_active_holds_is_reported(client, app):
    _, hold_id = _thread(client, app)
    with app.state.context.db.reader() as session:
        code = session.scalar(
            text("SELECT wallet_code FROM ledger_holds WHERE id = :h"), {"h": hold_id}
        )
    _sql(app, "UPDATE ledger_accounts SET held_micro = held_micro - 1 WHERE code = :c", c=code)
    assert _found(app) == [
        (
            None,
            "hold_mismatch",
            f"the held amount of {code} differs from the sum of its active holds",
        )
    ]


def test_a_hold_settled_without_giving_its_amount_back_is_reported(app, open_account):
    account = open_account()
    fund(app, account, 3_000_000)
    with app.state.context.db.writer() as session:
        now = clock.now()
        take_hold(
            session, account, 1_000, reference="x", expires_at=now + timedelta(days=1), now=now
        )
        session.commit()
    assert _found(app) == []
    _sql(app, "UPDATE ledger_holds SET status = 'released'")
    assert _kinds(app) == [(None, "hold_mismatch")]


# --- threads and their holds ------------------------------------------------------------


def test_an_open_thread_whose_hold_was_settled_is_reported(client, app):
    thread_id, hold_id = _thread(client, app)
    # Released with the amount given back, so only the thread check can see it.
    _sql(app, "UPDATE ledger_holds SET status = 'released' WHERE id = :h", h=hold_id)
    _sql(app, "UPDATE ledger_accounts SET held_micro = 0 WHERE kind = 'wallet'")
    assert _found(app) == [
        (
            None,
            "thread_hold_mismatch",
            f"thread {thread_id} is open but its hold {hold_id} is released",
        )
    ]


def test_an_open_thread_within_its_life_with_a_lapsed_hold_is_reported(client, app):
    thread_id, hold_id = _thread(client, app)
    _sql(app, "UPDATE ledger_holds SET status = 'lapsed' WHERE id = :h", h=hold_id)
    _sql(app, "UPDATE ledger_accounts SET held_micro = 0 WHERE kind = 'wallet'")
    assert _kinds(app) == [(None, "thread_hold_mismatch")]


def test_an_open_thread_without_its_hold_is_reported(client, app):
    thread_id, _ = _thread(client, app)
    _sql(app, "UPDATE threads SET hold_id = 'no-such-hold' WHERE id = :t", t=thread_id)
    assert _found(app) == [
        (
            None,
            "thread_hold_mismatch",
            f"thread {thread_id} is open but its hold no-such-hold is missing",
        )
    ]


@pytest.mark.parametrize("status", ["rejected", "finalized", "closed"])
def test_an_active_hold_whose_thread_is_no_longer_open_is_reported(client, app, status):
    thread_id, hold_id = _thread(client, app)
    _sql(app, "UPDATE threads SET status = :s WHERE id = :t", s=status, t=thread_id)
    assert _found(app) == [
        (
            None,
            "thread_hold_mismatch",
            f"hold {hold_id} is active but its thread {thread_id} is {status}",
        )
    ]
    run = seal_now(app)
    assert (run.status, run.problem_count) == ("broken", 1)


def test_the_lapse_allowance_starts_at_the_hold_end_less_the_clock_tolerance(client, app):
    thread_id, _ = _thread(client, app)
    _sql(app, "UPDATE threads SET status = 'closed' WHERE id = :t", t=thread_id)
    with app.state.context.db.reader() as session:
        expires = session.scalar(select(Hold.expires_at))
    until_allowed = expires - CLOCK_TOLERANCE - clock.now()
    with clock.travel(until_allowed - timedelta(minutes=1)):
        assert _kinds(app) == [(None, "thread_hold_mismatch")]
    # From then on a replica whose clock runs ahead may have closed it as lapsed.
    with clock.travel(until_allowed + timedelta(minutes=1)):
        assert _found(app) == []


# --- listing and counting ---------------------------------------------------------------


def test_every_mismatch_is_counted_past_the_listing_cap(app, open_account):
    accounts = [open_account() for _ in range(3)]
    _sql(app, "UPDATE ledger_accounts SET total_micro = 7 WHERE kind = 'wallet'")
    found = audit(app.state.context.db.engine, listed=2, reveal_ids=True).found
    assert found.problem_count == 3
    assert [p.detail.split()[4] for p in found.problems] == sorted(
        books.wallet_code(a) for a in accounts
    )[:2]
