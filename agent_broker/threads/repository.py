"""The threads' statements, prepared once (agent_broker.db.prepared), behind the operations
the negotiation (agent_broker.threads.service) and the seal (agent_broker.threads.sealing)
ask for. Where a statement can wait for the session's next round trip, the function says
so in its name or docstring; the rules never see how."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import String, bindparam, case, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, inserting
from agent_broker.listings.models import Listing
from agent_broker.threads.models import Thread

_threads = Thread.__table__
_listings = Listing.__table__

# --- Negotiation: reading, opening, offers, rejecting ---------------------------------

_THREAD = Prepared(select(_threads).where(_threads.c.id == bindparam("thread_id")))
_INSERT = inserting(_threads, returning=True)
# A thread that can still move (the seal's condition too).
_OPEN_NOW = (
    _threads.c.id == bindparam("thread_id"),
    _threads.c.status == "open",
    _threads.c.expires_at > bindparam("now"),
)
# The offer in one statement when the caller is a party whose turn it is (the usual case);
# it matches nothing otherwise, and service.offer() then reads the thread to say why.
# Conditional on the turn, so two simultaneous offers cannot both land. The caller's id is
# typed here: poster_id and opener_id take accounts.id's type only once that model is
# loaded, and a bind keeps the type its column had when the statement was built (the SQL
# would otherwise depend on the order of imports).
_CALLER = bindparam("caller", type_=String(36))
_CALLERS_SIDE = case(
    (_threads.c.poster_id == _CALLER, "poster"),
    (_threads.c.opener_id == _CALLER, "negotiator"),
)
_OFFER_IN_TURN = Prepared(
    update(_threads)
    .where(*_OPEN_NOW, _threads.c.turn == _CALLERS_SIDE)
    .values(
        diff=bindparam("diff"),
        turn=case((_threads.c.turn == "poster", "negotiator"), else_="poster"),
        updated_at=bindparam("now"),
    )
    .returning(*_threads.c)
)
# The same offer naming a price: the thread's price becomes it.
_PRICED_OFFER_IN_TURN = Prepared(
    update(_threads)
    .where(*_OPEN_NOW, _threads.c.turn == _CALLERS_SIDE)
    .values(
        diff=bindparam("diff"),
        price_micro=bindparam("price"),
        turn=case((_threads.c.turn == "poster", "negotiator"), else_="poster"),
        updated_at=bindparam("now"),
    )
    .returning(*_threads.c)
)
_REJECT = Prepared(
    update(_threads)
    .where(_threads.c.id == bindparam("thread_id"), _threads.c.status == "open")
    .values(status="rejected", updated_at=bindparam("now"))
    .returning(*_threads.c)
)


def find_thread(session: Session, thread_id: str) -> Any:
    """The thread's row, or None."""
    return _THREAD.one_or_none(session, thread_id=thread_id)


def insert_thread(session: Session, **columns: Any) -> Any:
    """Insert a thread, given every column; the row as written. The insert goes with the
    session's next round trip where that saves one (an error it meets is raised there and
    fails the transaction)."""
    return _INSERT.queue_row(session, **columns)


def offer_in_turn(
    session: Session,
    thread_id: str,
    *,
    caller: str,
    diff: str,
    now: datetime,
    price: int | None = None,
) -> Any:
    """Write the caller's offer (and the price it names, if any) and pass the turn if the
    thread is open and it is the caller's turn as a party; the thread as moved, or None if
    it was not."""
    if price is not None:
        return _PRICED_OFFER_IN_TURN.one_or_none(
            session, thread_id=thread_id, now=now, caller=caller, diff=diff, price=price
        )
    return _OFFER_IN_TURN.one_or_none(
        session, thread_id=thread_id, now=now, caller=caller, diff=diff
    )


def set_price_hold(session: Session, thread_id: str, hold_id: str | None) -> None:
    """The buyer's price hold of the thread (escrow sell listings) is now this one."""
    session.execute(
        update(_threads).where(_threads.c.id == thread_id).values(price_hold_id=hold_id)
    )


def reject(session: Session, thread_id: str, *, now: datetime) -> Any:
    """Mark the thread rejected if it is open; the thread as rejected, or None."""
    return _REJECT.one_or_none(session, thread_id=thread_id, now=now)


# --- The seal -------------------------------------------------------------------------

# The thread's listing, read and row-locked as listings.lock does, found by the thread's
# id: a thread never changes listing, so a seal reads the thread only once, under the lock.
_LOCK_LISTING_OF = Prepared(
    select(_listings)
    .where(
        _listings.c.id
        == select(_threads.c.listing_id)
        .where(_threads.c.id == bindparam("thread_id"))
        .scalar_subquery()
    )
    .with_for_update()
)
_SEAL = Prepared(
    update(_threads)
    .where(*_OPEN_NOW, _threads.c.turn == "poster")
    .values(status="finalized", updated_at=bindparam("now"))
)
_CLOSE_COMPETITOR = Prepared(
    update(_threads)
    .where(_threads.c.id == bindparam("thread_id"), _threads.c.status == "open")
    .values(status="closed", updated_at=bindparam("now"))
)
# The open threads of a thread's listing, row-locked in id order (finalize: sent with the
# listing's lock, so the listing is locked first).
_OPEN_ON_LISTING_OF = Prepared(
    select(_threads)
    .where(
        _threads.c.listing_id
        == select(_threads.c.listing_id)
        .where(_threads.c.id == bindparam("thread_id"))
        .scalar_subquery(),
        _threads.c.status == "open",
    )
    .order_by(_threads.c.id)
    .with_for_update()
)


def lock_listing_of_later(session: Session, thread_id: str) -> Callable[[], Any]:
    """Row-lock the thread's listing, sent with the session's next statement where that
    saves a round trip; the function returned gives the listing's row (None without one)
    once that statement has run."""
    return _LOCK_LISTING_OF.later(session, thread_id=thread_id).one_or_none


def lock_open_threads_on_listing_of(session: Session, thread_id: str) -> list[Any]:
    """The open threads of the thread's listing, row-locked in id order."""
    return _OPEN_ON_LISTING_OF.all(session, thread_id=thread_id)


def finalize_if_open(session: Session, thread_id: str, *, now: datetime) -> bool:
    """Mark the thread finalized if it is open and the poster's turn; whether it was."""
    return _SEAL.execute(session, thread_id=thread_id, now=now) == 1


def close_if_open(session: Session, thread_id: str, *, now: datetime) -> bool:
    """Mark the thread closed if it is open; whether it was."""
    return _CLOSE_COMPETITOR.execute(session, thread_id=thread_id, now=now) == 1
