"""Deal escrow money: the price moves from the buyer into the escrow book at the seal and
out of it once, when the escrow settles. Every movement is a journal entry whose reference
is the deal, so the journal alone shows what each escrow took in and paid out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker.ledger import books
from agent_broker.ledger.events import fee_captured
from agent_broker.ledger.holds import capture_hold
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.service import charge

BPS = 10_000
HOLD_KIND = "escrow_hold"
SETTLE_KINDS = {"released": "escrow_release", "refunded": "escrow_refund", "split": "escrow_split"}


@dataclass(frozen=True)
class Settlement:
    released_micro: int  # paid to the seller, the fee taken
    refunded_micro: int  # given back to the buyer
    fee_micro: int  # the escrow fee, to the fee book


def fee_of(seller_share_micro: int, fee_bps: int) -> int:
    # Rounded down: a fraction of a micro-dollar stays with the seller.
    return seller_share_micro * fee_bps // BPS


def share_of(amount_micro: int, seller_share_bps: int) -> int:
    # Rounded down: a fraction of a micro-dollar goes back to the buyer.
    return amount_micro * seller_share_bps // BPS


def hold_from_thread_hold(
    session: Session, hold_id: str, *, deal_id: str, locked_wallet: str, now: datetime
) -> int:
    """Capture the buyer's price hold (taken when the thread opened, topped up by offers)
    into the escrow book; the amount it held."""
    return capture_hold(
        session,
        hold_id,
        sink=books.ESCROW,
        kind=HOLD_KIND,
        memo="deal price into escrow",
        reference=deal_id,
        locked_wallet=locked_wallet,
        now=now,
    )


def hold_by_charge(
    session: Session, buyer_id: str, amount_micro: int, *, deal_id: str, now: datetime
) -> None:
    """Take the price from the buyer's spendable balance into the escrow book; raises
    InsufficientFunds (402 insufficient_funds_self), writing nothing."""
    charge(
        session,
        buyer_id,
        amount_micro,
        sink=books.ESCROW,
        kind=HOLD_KIND,
        memo="deal price into escrow",
        reference=deal_id,
        now=now,
    )


def plan(amount_micro: int, *, seller_share_bps: int, fee_bps: int) -> Settlement:
    """What a settlement pays: the seller's share less the fee, the fee, the rest back."""
    share = share_of(amount_micro, seller_share_bps)
    fee = fee_of(share, fee_bps)
    return Settlement(
        released_micro=share - fee, refunded_micro=amount_micro - share, fee_micro=fee
    )


def settle(
    session: Session,
    settlement: Settlement,
    *,
    deal_id: str,
    outcome: str,
    seller_id: str,
    buyer_id: str,
    now: datetime,
) -> None:
    """Pay the escrow out in one entry: the seller's share less the fee to the seller, the
    fee to the fee book, the rest back to the buyer. The caller settles each escrow once
    (agent_broker.escrow moves its status conditionally first)."""
    fee = settlement.fee_micro
    amount_micro = settlement.released_micro + settlement.refunded_micro + fee
    postings = [
        (code, amount)
        for code, amount in (
            (books.ESCROW, -amount_micro),
            (books.wallet_code(seller_id), settlement.released_micro),
            (books.FEES, fee),
            (books.wallet_code(buyer_id), settlement.refunded_micro),
        )
        if amount
    ]
    if postings:
        kind = SETTLE_KINDS[outcome]
        post_entry(
            session,
            kind=kind,
            memo=f"escrow {outcome}",
            reference=deal_id,
            postings=postings,
            now=now,
        )
        if fee:
            fee_captured(session, kind=kind, amount_micro=fee)


def payout(
    session: Session, account_id: str, amount_micro: int, *, reference: str, now: datetime
) -> None:
    """Journal money the operator paid out off-platform: it leaves the account's spendable
    balance for the payouts book (402 insufficient_funds_self when it is not there)."""
    charge(
        session,
        account_id,
        amount_micro,
        sink=books.PAYOUTS,
        kind="payout",
        memo="paid out off-platform",
        reference=reference,
        now=now,
    )
