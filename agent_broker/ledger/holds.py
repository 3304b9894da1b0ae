"""Escrow holds: money set aside from spendable balance until released, captured or lapsed.

Every transition is a conditional UPDATE on the hold's status, so a hold is settled
exactly once even when a request and the expiry job race for it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker.ledger import repository
from agent_broker.ledger.books import FEES, wallet_code
from agent_broker.ledger.errors import HoldNotCapturable, InsufficientFunds
from agent_broker.ledger.events import fee_captured
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.locks import lock_wallet_of_hold


@dataclass(frozen=True)
class SettledHold:
    wallet_code: str
    amount_micro: int
    reference: str | None


def take_hold(
    session: Session,
    account_id: str,
    amount_micro: int,
    *,
    reference: str,
    expires_at: datetime,
    now: datetime,
) -> str:
    """Set money aside from the account's spendable balance; the new hold's id."""
    if type(amount_micro) is not int or amount_micro <= 0:
        raise ValueError("a hold amount must be a positive integer")
    code = wallet_code(account_id)
    if not repository.reserve(session, code, amount_micro):
        # Lapsed holds give money back: settle them and try once more (only then, since
        # almost every hold is covered without).
        if not settle_lapsed_holds(session, now=now, account_id=account_id):
            raise InsufficientFunds()
        if not repository.reserve(session, code, amount_micro):
            raise InsufficientFunds()
    hold_id = str(uuid.uuid4())
    repository.insert_hold(
        session,
        hold_id=hold_id,
        code=code,
        amount=amount_micro,
        reference=reference,
        now=now,
        expires_at=expires_at,
    )
    return hold_id


def _settle(
    session: Session,
    hold_id: str,
    status: str,
    now: datetime,
    *,
    live_only: bool,
    locked_wallet: str | None = None,
) -> SettledHold | None:
    """Move an active hold to `status` and give its amount back to spendable. Returns the
    hold when this call settled it, None when it was already settled (or had lapsed and
    `live_only` asks for a hold that has not). `locked_wallet`: the hold's wallet, which
    the caller has locked already (ledger.locks.lock_wallets)."""
    # The wallet before its hold: the lock order every money path follows (ledger.locks).
    if locked_wallet is None:
        lock_wallet_of_hold(session, hold_id)
    row = repository.settle_hold(session, hold_id, status, now, live_only=live_only)
    if row is None:
        return None
    if locked_wallet is not None and row.wallet_code != locked_wallet:
        # The caller locked another wallet: the lock order is broken, so nothing moves.
        raise RuntimeError("the hold belongs to a wallet the caller did not lock")
    repository.unreserve(session, row.wallet_code, row.amount_micro)
    return SettledHold(row.wallet_code, row.amount_micro, row.reference)


def release_hold(session: Session, hold_id: str, *, now: datetime) -> bool:
    """Return a hold to the owner's spendable balance. False if it was already settled."""
    return _settle(session, hold_id, "released", now, live_only=False) is not None


def capture_hold(
    session: Session,
    hold_id: str,
    *,
    sink: str,
    kind: str,
    memo: str,
    now: datetime,
    locked_wallet: str | None = None,
    reference: str | None = None,
) -> int:
    """Turn an active, unexpired hold into a journalled charge paid to `sink` (the amount
    captured is returned), referenced
    as the hold is unless `reference` names another. The caller that has locked the
    hold's wallet (lock_wallets) names it in `locked_wallet`, which saves locking it
    again."""
    hold = _settle(session, hold_id, "captured", now, live_only=True, locked_wallet=locked_wallet)
    if hold is None:
        raise HoldNotCapturable()
    post_entry(
        session,
        kind=kind,
        memo=memo,
        reference=reference or hold.reference,
        now=now,
        postings=[(hold.wallet_code, -hold.amount_micro), (sink, hold.amount_micro)],
    )
    if sink == FEES:
        fee_captured(session, kind=kind, amount_micro=hold.amount_micro)
    return hold.amount_micro


def settle_lapsed_holds(
    session: Session, *, now: datetime, account_id: str | None = None, limit: int = 1000
) -> int:
    """Give lapsed holds back to spendable; for one wallet (on read) or all (the job)."""
    code = None if account_id is None else wallet_code(account_id)
    hold_ids = repository.lapsed_hold_ids(session, now=now, limit=limit, code=code)
    settled = 0
    for hold_id in hold_ids:
        if _settle(session, hold_id, "lapsed", now, live_only=False) is not None:
            settled += 1
    return settled
