"""Escrow holds: money set aside from spendable balance until released, captured or lapsed.

Every transition is a conditional UPDATE on the hold's status, so a hold is settled
exactly once even when a request and the expiry job race for it."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from agent_broker.ledger.books import FEES, wallet_code
from agent_broker.ledger.errors import HoldNotCapturable, InsufficientFunds
from agent_broker.ledger.events import fee_captured
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.locks import lock_wallet_of_hold
from agent_broker.ledger.models import Hold, LedgerAccount

_holds = Hold.__table__
_wallets = LedgerAccount.__table__


def take_hold(
    session: Session,
    account_id: str,
    amount_micro: int,
    *,
    reference: str,
    expires_at: datetime,
    now: datetime,
) -> Hold:
    if type(amount_micro) is not int or amount_micro <= 0:
        raise ValueError("a hold amount must be a positive integer")
    code = wallet_code(account_id)
    settle_lapsed_holds(session, now=now, account_id=account_id)
    result = session.execute(
        update(_wallets)
        .where(_wallets.c.code == code)
        .where(_wallets.c.total_micro - _wallets.c.held_micro >= amount_micro)
        .values(held_micro=_wallets.c.held_micro + amount_micro)
    )
    if result.rowcount != 1:
        raise InsufficientFunds()
    hold = Hold(
        id=str(uuid.uuid4()),
        wallet_code=code,
        amount_micro=amount_micro,
        status="active",
        reference=reference,
        created_at=now,
        expires_at=expires_at,
    )
    session.add(hold)
    session.flush()
    return hold


def _settle(
    session: Session, hold_id: str, status: str, now: datetime, *, live_only: bool
) -> Hold | None:
    """Move an active hold to `status` and give its amount back to spendable. Returns the
    hold when this call settled it, None when it was already settled (or had lapsed and
    `live_only` asks for a hold that has not)."""
    # The wallet before its hold: the lock order every money path follows (ledger.locks).
    lock_wallet_of_hold(session, hold_id)
    stmt = (
        update(_holds)
        .where(_holds.c.id == hold_id, _holds.c.status == "active")
        .values(status=status, settled_at=now)
    )
    if live_only:
        stmt = stmt.where(_holds.c.expires_at > now)
    if session.execute(stmt).rowcount != 1:
        return None
    hold = session.get(Hold, hold_id, populate_existing=True)
    assert hold is not None
    session.execute(
        update(_wallets)
        .where(_wallets.c.code == hold.wallet_code)
        .values(held_micro=_wallets.c.held_micro - hold.amount_micro)
    )
    return hold


def release_hold(session: Session, hold_id: str, *, now: datetime) -> bool:
    """Return a hold to the owner's spendable balance. False if it was already settled."""
    return _settle(session, hold_id, "released", now, live_only=False) is not None


def capture_hold(
    session: Session, hold_id: str, *, sink: str, kind: str, memo: str, now: datetime
) -> None:
    """Turn an active, unexpired hold into a journalled charge paid to `sink`."""
    hold = _settle(session, hold_id, "captured", now, live_only=True)
    if hold is None:
        raise HoldNotCapturable()
    post_entry(
        session,
        kind=kind,
        memo=memo,
        reference=hold.reference,
        now=now,
        postings=[(hold.wallet_code, -hold.amount_micro), (sink, hold.amount_micro)],
    )
    if sink == FEES:
        fee_captured(session, kind=kind, amount_micro=hold.amount_micro)


def settle_lapsed_holds(
    session: Session, *, now: datetime, account_id: str | None = None, limit: int = 1000
) -> int:
    """Give lapsed holds back to spendable; for one wallet (on read) or all (the job)."""
    query = select(_holds.c.id).where(_holds.c.status == "active", _holds.c.expires_at <= now)
    if account_id is not None:
        query = query.where(_holds.c.wallet_code == wallet_code(account_id))
    settled = 0
    # Wallet by wallet in code order, the order finalize locks them in (ledger.locks).
    ordered = query.order_by(_holds.c.wallet_code, _holds.c.expires_at).limit(limit)
    for hold_id in session.execute(ordered).scalars():
        if _settle(session, hold_id, "lapsed", now, live_only=False) is not None:
            settled += 1
    return settled
