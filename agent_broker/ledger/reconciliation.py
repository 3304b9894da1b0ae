"""Reconciliation: the running figures the write path keeps against the records they are
kept from. Each check is one aggregate or join query that returns only the mismatches, so
a consistent ledger costs a few scans and no Python loop over the journal.

- `balance_mismatch`: a wallet's total_micro differs from the sum of its postings. Only
  wallets keep a running total; the system books' balance is, by definition, the sum of
  their postings (their stored total is never maintained).
- `hold_mismatch`: a book's held_micro differs from the sum of its holds in status
  `active`. The hold rows are the truth here: holds are not journalled. A hold past its
  expires_at but still `active` is still held (it is given back lazily, and held_micro
  with it), so it counts.
- `thread_hold_mismatch`: the negotiation threads disagree with their holds. An active
  hold must belong to an `open` thread, and an `open` thread must have its hold `active`.
  Both rules allow for lapse being settled lazily: once the hold is past its expires_at it
  may still be `active` while its thread was closed by the expiry job; once the thread is
  past its expires_at it may still be `open` while its hold has `lapsed`. `now` is read
  inside the snapshot, after its first read, so anything the snapshot shows was written
  at or before it; CLOCK_TOLERANCE covers replicas whose clocks run a little ahead.

Each problem names the book code or the hold and thread ids (no amounts: the verdict is
public) and has no journal sequence."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import Row, Select, String, and_, column, func, or_, select, table
from sqlalchemy.orm import Session

from agent_broker.db.base import UTCDateTime
from agent_broker.ledger.models import Hold, LedgerAccount, Posting
from agent_broker.ledger.verification import Verification

CLOCK_TOLERANCE = timedelta(minutes=5)

# The threads table of agent_broker.threads, read by name: the ledger sits below the
# threads feature and must not import it. Only the columns the hold check needs.
_threads = table(
    "threads",
    column("id", String),
    column("status", String),
    column("hold_id", String),
    column("expires_at", UTCDateTime()),
)


def reconcile(session: Session, found: Verification, *, now: datetime) -> None:
    """Add every reconciliation problem to `found`, in the caller's snapshot."""
    _balances(session, found)
    _held(session, found)
    _thread_holds(session, found, now=now)


def _report(
    session: Session,
    found: Verification,
    query: Select,
    kind: str,
    detail: Callable[[Row], str],
) -> None:
    """List the mismatches the query returns, as far as there is room, and count them all."""
    room = found.room
    rows = session.execute(query.limit(room + 1)).all()
    for row in rows[:room]:
        found.add(None, kind, detail(row))
    if len(rows) > room:
        total = session.scalar(select(func.count()).select_from(query.subquery()))
        found.problem_count += int(total or 0) - room


def _balances(session: Session, found: Verification) -> None:
    postings = (
        select(
            Posting.account_code.label("code"),
            func.sum(Posting.amount_micro).label("total"),
        )
        .group_by(Posting.account_code)
        .subquery()
    )
    query = (
        select(LedgerAccount.code)
        .outerjoin(postings, postings.c.code == LedgerAccount.code)
        .where(
            LedgerAccount.kind == "wallet",
            LedgerAccount.total_micro != func.coalesce(postings.c.total, 0),
        )
        .order_by(LedgerAccount.code)
    )
    _report(
        session,
        found,
        query,
        "balance_mismatch",
        lambda row: (
            f"the balance of wallet {found.name(row.code)} differs from the sum of its "
            "journal postings"
        ),
    )


def _held(session: Session, found: Verification) -> None:
    active = (
        select(Hold.wallet_code.label("code"), func.sum(Hold.amount_micro).label("held"))
        .where(Hold.status == "active")
        .group_by(Hold.wallet_code)
        .subquery()
    )
    query = (
        select(LedgerAccount.code)
        .outerjoin(active, active.c.code == LedgerAccount.code)
        .where(LedgerAccount.held_micro != func.coalesce(active.c.held, 0))
        .order_by(LedgerAccount.code)
    )
    _report(
        session,
        found,
        query,
        "hold_mismatch",
        lambda row: (
            f"the held amount of {found.name(row.code)} differs from the sum of its active holds"
        ),
    )


def _thread_holds(session: Session, found: Verification, *, now: datetime) -> None:
    horizon = now + CLOCK_TOLERANCE
    # An active hold whose thread is no longer open, and not yet past its own life.
    stray = (
        select(Hold.id.label("hold_id"), _threads.c.id.label("thread_id"), _threads.c.status)
        .join(_threads, _threads.c.hold_id == Hold.id)
        .where(Hold.status == "active", _threads.c.status != "open", Hold.expires_at > horizon)
        .order_by(Hold.id)
    )
    _report(
        session,
        found,
        stray,
        "thread_hold_mismatch",
        lambda row: (
            f"hold {found.name(row.hold_id)} is active but its thread "
            f"{found.name(row.thread_id)} is {row.status}"
        ),
    )
    # An open thread whose hold is gone or settled, unless the thread's life is over and
    # the hold lapsed with it.
    lapsed_with_thread = and_(Hold.status == "lapsed", _threads.c.expires_at <= horizon)
    unheld = (
        select(_threads.c.id.label("thread_id"), _threads.c.hold_id, Hold.status)
        .outerjoin(Hold, Hold.id == _threads.c.hold_id)
        .where(_threads.c.status == "open")
        .where(or_(Hold.id.is_(None), and_(Hold.status != "active", ~lapsed_with_thread)))
        .order_by(_threads.c.id)
    )
    _report(
        session,
        found,
        unheld,
        "thread_hold_mismatch",
        lambda row: (
            f"thread {found.name(row.thread_id)} is open but its hold "
            f"{found.name(row.hold_id or '-')} is {row.status or 'missing'}"
        ),
    )
