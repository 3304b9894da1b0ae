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

- `escrow_mismatch`: a deal's escrow disagrees with the journal. What the escrow book
  took in and paid out under the deal's reference must net to the escrow's amount while
  it is open and to zero once it settled; a settled escrow's seller, buyer and fee
  payouts must be what its row says, and add up to its amount; the escrow book holds
  nothing under a reference that is no escrow.
- `escrow_overdue`: an escrow still open a deadline-job period (plus CLOCK_TOLERANCE)
  past its deadline: the escrow-deadlines job is not settling it.

Each problem names the book code or the hold and thread ids (no amounts: the verdict is
public) and has no journal sequence."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import (
    BigInteger,
    Row,
    Select,
    String,
    and_,
    case,
    column,
    func,
    literal,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session

from agent_broker.db.base import UTCDateTime
from agent_broker.ledger.books import ESCROW, FEES, WALLET_PREFIX
from agent_broker.ledger.models import Hold, JournalEntry, LedgerAccount, Posting
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


# The deal escrows of agent_broker.escrow, read by name like the threads above.
_escrows = table(
    "deal_escrows",
    column("deal_id", String),
    column("buyer_id", String),
    column("seller_id", String),
    column("status", String),
    column("amount_micro", BigInteger),
    column("released_micro", BigInteger),
    column("refunded_micro", BigInteger),
    column("fee_micro", BigInteger),
    column("deliver_by", UTCDateTime()),
    column("accept_by", UTCDateTime()),
)
OPEN_ESCROW = ("held", "delivered", "rejected")
# The escrow-deadlines job's period (agent_broker.jobs.registry): an escrow may stay open
# this long past its deadline before the check calls it overdue.
ESCROW_JOB_PERIOD = timedelta(minutes=5)


def reconcile(session: Session, found: Verification, *, now: datetime) -> None:
    """Add every reconciliation problem to `found`, in the caller's snapshot."""
    _balances(session, found)
    _held(session, found)
    _thread_holds(session, found, now=now)
    _escrow_money(session, found)
    _escrow_deadlines(session, found, now=now)


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


def _escrow_money(session: Session, found: Verification) -> None:
    settling = JournalEntry.kind != "escrow_hold"

    def paid(code: object) -> object:
        # What the escrow's settlement entry paid to this book.
        return func.sum(
            case((and_(settling, Posting.account_code == code), Posting.amount_micro), else_=0)
        )

    escrow = _escrows.c
    seller = literal(WALLET_PREFIX) + escrow.seller_id
    buyer = literal(WALLET_PREFIX) + escrow.buyer_id
    journal = (
        select(
            escrow.deal_id,
            func.sum(case((Posting.account_code == ESCROW, Posting.amount_micro), else_=0)).label(
                "net"
            ),
            paid(seller).label("to_seller"),
            paid(buyer).label("to_buyer"),
            paid(FEES).label("to_fees"),
        )
        .select_from(_escrows)
        .join(JournalEntry, JournalEntry.reference == escrow.deal_id)
        .join(Posting, Posting.entry_sequence == JournalEntry.sequence)
        .where(JournalEntry.kind.like("escrow_%"))
        .group_by(escrow.deal_id)
        .subquery()
    )
    net = func.coalesce(journal.c.net, 0)
    is_open = escrow.status.in_(OPEN_ESCROW)
    settled_wrong = or_(
        net != 0,
        func.coalesce(journal.c.to_seller, 0) != func.coalesce(escrow.released_micro, -1),
        func.coalesce(journal.c.to_buyer, 0) != func.coalesce(escrow.refunded_micro, -1),
        func.coalesce(journal.c.to_fees, 0) != func.coalesce(escrow.fee_micro, -1),
        escrow.released_micro + escrow.refunded_micro + escrow.fee_micro != escrow.amount_micro,
    )
    query = (
        select(escrow.deal_id, escrow.status)
        .outerjoin(journal, journal.c.deal_id == escrow.deal_id)
        .where(
            or_(
                and_(is_open, net != escrow.amount_micro),
                and_(~is_open, settled_wrong),
            )
        )
        .order_by(escrow.deal_id)
    )
    _report(
        session,
        found,
        query,
        "escrow_mismatch",
        lambda row: (
            f"the escrow of deal {found.name(row.deal_id)} ({row.status}) differs from what "
            "the journal moved for it"
        ),
    )
    stray = (
        select(JournalEntry.reference)
        .join(Posting, Posting.entry_sequence == JournalEntry.sequence)
        .outerjoin(_escrows, escrow.deal_id == JournalEntry.reference)
        .where(Posting.account_code == ESCROW, escrow.deal_id.is_(None))
        .group_by(JournalEntry.reference)
        .order_by(JournalEntry.reference)
    )
    _report(
        session,
        found,
        stray,
        "escrow_mismatch",
        lambda row: (
            f"the escrow book moved money for {found.name(row.reference or '-')}, which is "
            "no deal's escrow"
        ),
    )


def _escrow_deadlines(session: Session, found: Verification, *, now: datetime) -> None:
    cutoff = now - ESCROW_JOB_PERIOD - CLOCK_TOLERANCE
    escrow = _escrows.c
    query = (
        select(escrow.deal_id, escrow.status)
        .where(
            or_(
                and_(escrow.status == "held", escrow.deliver_by < cutoff),
                and_(escrow.status == "delivered", escrow.accept_by < cutoff),
            )
        )
        .order_by(escrow.deal_id)
    )
    _report(
        session,
        found,
        query,
        "escrow_overdue",
        lambda row: (
            f"the escrow of deal {found.name(row.deal_id)} is still {row.status} past its deadline"
        ),
    )
