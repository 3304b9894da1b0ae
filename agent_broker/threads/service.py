"""Thread rules: who may open, whose turn it is, closing, reading. Money moves only through
the ledger (the opener's hold). Sealing a thread into a deal is agent_broker.threads.sealing."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import service as accounts
from agent_broker.accounts.models import AccountRecord
from agent_broker.accounts.profile import setup_requirements
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import service as ledger
from agent_broker.listings import service as listings
from agent_broker.listings.views import ListingLike
from agent_broker.pricing import DEAL_FEE_MICRO
from agent_broker.problems import Forbidden, InvalidInput, NotFound, Reason
from agent_broker.reputation import records as reputation_records
from agent_broker.reputation import service as reputation
from agent_broker.scanning.brake import Screen
from agent_broker.scanning.normalize import is_blank
from agent_broker.threads import repository
from agent_broker.threads.errors import (
    AlreadyFinalized,
    ListingExpired,
    OutOfTurn,
    ProfileIncomplete,
    SelfListingNegotiation,
    ThreadAutoClosed,
)
from agent_broker.threads.models import Thread
from agent_broker.webhooks import service as webhooks

MINE_LIMIT = 200
_threads = Thread.__table__


def effective_status(thread: Thread, now: datetime) -> str:
    # An open thread past its life is closed, as its hold has lapsed.
    if thread.status == "open" and thread.expires_at <= now:
        return "closed"
    return thread.status


def view(thread: Thread, now: datetime) -> dict:
    status = effective_status(thread, now)
    # A thread that ran out of life changed state at expires_at, whether or not the
    # expiry job has written it yet.
    lapsed = thread.status == "open" and status == "closed"
    return {
        "id": thread.id,
        "listing_id": thread.listing_id,
        "status": status,
        "turn": thread.turn,
        "diff": thread.diff,
        "amount_micro": thread.amount_micro,
        "price_micro": thread.price_micro,
        "created_at": clock.rfc3339(thread.created_at),
        "updated_at": clock.rfc3339(thread.expires_at if lapsed else thread.updated_at),
    }


def _diff(text: str) -> str:
    if is_blank(text):
        raise InvalidInput("diff must not be empty (or only invisible characters).")
    return text


def _require_complete_profiles(opener: AccountRecord, poster: AccountRecord) -> None:
    own = setup_requirements(opener)
    if not own.complete:
        raise ProfileIncomplete(
            "Complete your profile before opening a thread; no fee was held.",
            reason=Reason.profile_incomplete_self,
            extra=own.as_dict(),
        )
    if not setup_requirements(poster).complete:
        # What the poster lacks is theirs to know: nothing of it is disclosed.
        raise ProfileIncomplete(
            "The listing's poster has not completed their profile yet, so the listing cannot"
            " receive threads; no fee was held.",
            reason=Reason.profile_incomplete_counterparty,
            extra={"missing": [], "blocked_actions": ["open_thread"], "next": []},
        )


def open_thread(
    session: Session,
    opener: AccountRecord,
    listing_id: str,
    diff: str,
    *,
    screen: Screen,
    ttl: timedelta,
    now: datetime,
    price_micro: int | None = None,
) -> dict:
    """Refusals in order: 404 unknown listing, 409 own listing, 403 the listing's escrow
    evaluator, 410 not live, 428 profile, 400/422/429 the diff, 402 the opener's balance.
    The opener's fee is held, and on an escrow sell listing the price too (the opener is
    its buyer).

    The listing is locked first, as finalize locks it: a thread cannot slip onto a listing
    whose deal is being sealed."""
    listing = listings.lock(session, listing_id)
    if listing.poster_id == opener.id:
        raise SelfListingNegotiation()
    if listing.settlement == "escrow" and listing.evaluator_id == opener.id:
        raise Forbidden("The listing's evaluator cannot negotiate on it; nothing was held.")
    if not listings.is_live(listing, now):
        raise ListingExpired()
    _require_complete_profiles(opener, accounts.record(session, listing.poster_id))
    text = _diff(diff)
    screen({"diff": text})
    thread_id = str(uuid.uuid4())
    # A thread never outlives its listing: past the listing's life nothing can seal.
    expires_at = min(now + ttl, listing.expires_at)
    hold_id = ledger.take_hold(
        session, opener.id, DEAL_FEE_MICRO, reference=thread_id, expires_at=expires_at, now=now
    )
    price = listing.price_micro if price_micro is None else price_micro
    price_hold_id = None
    if _buyer_opens(listing) and price:
        price_hold_id = ledger.take_hold(
            session, opener.id, price, reference=thread_id, expires_at=expires_at, now=now
        )
    reputation.touch(session, [opener.id], now=now)
    thread = repository.insert_thread(
        session,
        id=thread_id,
        listing_id=listing.id,
        poster_id=listing.poster_id,
        opener_id=opener.id,
        status="open",
        turn="poster",
        diff=text,
        amount_micro=DEAL_FEE_MICRO,
        hold_id=hold_id,
        price_micro=price,
        price_hold_id=price_hold_id,
        created_at=now,
        updated_at=now,
        expires_at=expires_at,
    )
    webhooks.enqueue(
        session,
        listing.poster_id,
        "thread.opened",
        thread.id,
        webhooks.thread_data(thread),
        now=now,
    )
    return view(thread, now)


def _buyer_opens(listing: ListingLike) -> bool:
    """On an escrow sell listing the opener is the buyer, whose price is held from the
    start (docs/interface.md §11.4)."""
    return listing.settlement == "escrow" and listing.listing_type == "sell"


def _follow_price(session: Session, thread: Any, *, now: datetime) -> Any:
    """The buyer named a new price on an escrow sell listing: the price hold becomes one
    of exactly that price (released and taken again; 402 when short, the offer with it)."""
    if thread.price_hold_id:
        ledger.release_hold(session, thread.price_hold_id, now=now)
    hold_id = None
    if thread.price_micro:
        hold_id = ledger.take_hold(
            session,
            thread.opener_id,
            thread.price_micro,
            reference=thread.id,
            expires_at=thread.expires_at,
            now=now,
        )
    repository.set_price_hold(session, thread.id, hold_id)


def release_holds(session: Session, thread: Any, *, now: datetime) -> None:
    """Give back what a thread that ends unsealed held: the fee and any price."""
    ledger.release_hold(session, thread.hold_id, now=now)
    if thread.price_hold_id:
        ledger.release_hold(session, thread.price_hold_id, now=now)


def party_thread(session: Session, thread_id: str, account_id: str) -> tuple[Thread, str]:
    """The thread and the caller's side. A non-party cannot tell it from a missing one."""
    thread = repository.find_thread(session, thread_id)
    if thread is None or account_id not in (thread.poster_id, thread.opener_id):
        raise NotFound("No such thread.")
    return thread, "poster" if account_id == thread.poster_id else "negotiator"


def refuse_unless_open(thread: Thread, now: datetime) -> None:
    status = effective_status(thread, now)
    if status == "finalized":
        raise AlreadyFinalized()
    if status == "closed":
        raise ThreadAutoClosed()
    if status == "rejected":
        raise OutOfTurn("This thread was rejected; nobody can move on it. Open a new thread.")


def offer(
    session: Session,
    account_id: str,
    thread_id: str,
    diff: str,
    *,
    screen: Screen,
    now: datetime,
    price_micro: int | None = None,
) -> dict:
    # Written first, then checked: a refusal of the text rolls the offer back with the
    # transaction, and every other refusal comes from the thread as read below, in the
    # order it always had (404, the thread's state, the turn, the text).
    moved = repository.offer_in_turn(
        session, thread_id, caller=account_id, diff=diff, now=now, price=price_micro
    )
    if moved is None:
        thread, side = party_thread(session, thread_id, account_id)
        refuse_unless_open(thread, now)
        if thread.turn != side:
            raise OutOfTurn()
        text = _diff(diff)
        screen({"diff": text})
        # Open and the caller's turn as read now: another offer landed in between.
        moved = repository.offer_in_turn(
            session, thread_id, caller=account_id, diff=text, now=now, price=price_micro
        )
        if moved is None:
            thread, _ = party_thread(session, thread_id, account_id)
            refuse_unless_open(thread, now)
            raise OutOfTurn()
    else:
        screen({"diff": _diff(diff)})
    buyer_named_price = price_micro is not None and account_id == moved.opener_id
    if buyer_named_price and _buyer_opens(listings.get(session, moved.listing_id)):
        _follow_price(session, moved, now=now)
    recipient = moved.opener_id if account_id == moved.poster_id else moved.poster_id
    webhooks.enqueue(
        session, recipient, "thread.offer", moved.id, webhooks.thread_data(moved), now=now
    )
    return view(moved, now)


def close(session: Session, account_id: str, thread_id: str, *, now: datetime) -> dict:
    """Either party rejects an open thread; the opener's hold goes back to them."""
    thread, _ = party_thread(session, thread_id, account_id)
    if thread.status == "rejected":
        return view(thread, now)  # closing twice changes nothing
    refuse_unless_open(thread, now)
    closed = repository.reject(session, thread.id, now=now)
    if closed is None:  # someone else moved it meanwhile
        thread, _ = party_thread(session, thread_id, account_id)
        if thread.status == "rejected":
            return view(thread, now)
        refuse_unless_open(thread, now)
        raise OutOfTurn()
    release_holds(session, closed, now=now)
    other = closed.opener_id if account_id == closed.poster_id else closed.poster_id
    webhooks.enqueue(
        session, other, "thread.closed", closed.id, webhooks.thread_data(closed), now=now
    )
    return view(closed, now)


def _with_counterparty(
    session: Session, account_id: str, threads: list[Thread], now: datetime
) -> list[dict]:
    """Thread reads carry the other party's reputation record (never their handle,
    endpoint or account id): one batch of queries for the whole list."""

    def other(thread: Thread) -> str:
        return thread.opener_id if thread.poster_id == account_id else thread.poster_id

    found = reputation_records.counterparty_records(
        session, {other(thread) for thread in threads}, now=now
    )
    return [{**view(thread, now), "counterparty": found[other(thread)]} for thread in threads]


def read(session: Session, account_id: str, thread_id: str, *, now: datetime) -> dict:
    thread, _ = party_thread(session, thread_id, account_id)
    return _with_counterparty(session, account_id, [thread], now)[0]


def inbox(session: Session, account_id: str, listing_id: str, *, now: datetime) -> list[dict]:
    listing = listings.get(session, listing_id)
    if listing.poster_id != account_id:
        raise Forbidden("Only the listing's poster may read its threads.")
    rows = session.scalars(
        select(Thread).where(Thread.listing_id == listing_id).order_by(Thread.created_at.desc())
    ).all()
    return _with_counterparty(session, account_id, list(rows), now)


def mine(session: Session, account_id: str, *, now: datetime) -> list[dict]:
    """The caller's threads on either side, most recently active first (at most 200)."""
    rows = session.scalars(
        select(Thread)
        .where(or_(Thread.poster_id == account_id, Thread.opener_id == account_id))
        .order_by(Thread.updated_at.desc(), Thread.id.desc())
        .limit(MINE_LIMIT)
    ).all()
    return _with_counterparty(session, account_id, list(rows), now)


def expire_due(session: Session, *, now: datetime) -> int:
    """Mark open threads past their life as closed (their holds lapse in the ledger), and
    tell both parties."""
    closed = session.execute(
        update(_threads)
        .where(_threads.c.status == "open", _threads.c.expires_at <= now)
        .values(status="closed", updated_at=_threads.c.expires_at)
        .returning(*_threads.c)
    ).all()
    for thread in closed:
        data = {**webhooks.thread_data(thread), "reason": "expired"}
        webhooks.enqueue_for_both(
            session,
            (thread.poster_id, thread.opener_id),
            "thread.auto_closed",
            thread.id,
            data,
            now=now,
        )
    return len(closed)


# --- Idempotency-Key wrappers: the same call, through any front door, happens once ----


def open_thread_once(
    session: Session,
    opener: AccountRecord,
    listing_id: str,
    diff: str,
    key: IdempotencyKey,
    *,
    screen: Screen,
    ttl: timedelta,
    now: datetime,
    price_micro: int | None = None,
) -> Outcome:
    def create() -> Outcome:
        thread = open_thread(
            session,
            opener,
            listing_id,
            diff,
            screen=screen,
            ttl=ttl,
            now=now,
            price_micro=price_micro,
        )
        return Outcome(201, thread)

    return run_once(session, opener.id, key, create, now=now)


def close_once(
    session: Session, account_id: str, thread_id: str, key: IdempotencyKey, *, now: datetime
) -> Outcome:
    return run_once(
        session,
        account_id,
        key,
        lambda: Outcome(200, close(session, account_id, thread_id, now=now)),
        now=now,
    )
