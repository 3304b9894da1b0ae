"""What the rest of the service may ask of the ledger. Only this package moves money."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.ledger import books
from agent_broker.ledger.holds import capture_hold, release_hold, settle_lapsed_holds, take_hold
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.models import LedgerAccount

__all__ = [
    "WalletView",
    "open_wallet",
    "wallet",
    "credit",
    "charge",
    "take_hold",
    "release_hold",
    "capture_hold",
    "settle_lapsed_holds",
    "is_funded",
]


@dataclass(frozen=True)
class WalletView:
    spendable_micro: int
    held_micro: int
    funded: bool


def open_wallet(session: Session, account_id: str, *, now: datetime) -> None:
    session.add(
        LedgerAccount(
            code=books.wallet_code(account_id),
            kind="wallet",
            owner_id=account_id,
            total_micro=0,
            held_micro=0,
            funded=False,
            created_at=now,
        )
    )
    session.flush()


def wallet(session: Session, account_id: str, *, now: datetime) -> WalletView:
    """The wallet as of `now`, lapsed holds given back first (they settle on read)."""
    settle_lapsed_holds(session, now=now, account_id=account_id)
    row = session.execute(
        select(LedgerAccount.total_micro, LedgerAccount.held_micro, LedgerAccount.funded)
        .where(LedgerAccount.code == books.wallet_code(account_id))
        .execution_options(populate_existing=True)
    ).one()
    return WalletView(
        spendable_micro=row.total_micro - row.held_micro,
        held_micro=row.held_micro,
        funded=bool(row.funded),
    )


def is_funded(session: Session, account_id: str) -> bool:
    return bool(
        session.scalar(
            select(LedgerAccount.funded).where(LedgerAccount.code == books.wallet_code(account_id))
        )
    )


def credit(
    session: Session,
    account_id: str,
    amount_micro: int,
    *,
    source: str,
    kind: str,
    memo: str,
    now: datetime,
    real_money: bool = False,
    reference: str | None = None,
) -> None:
    """Pay into a wallet from a system book; real money also marks the wallet funded."""
    if type(amount_micro) is not int or amount_micro <= 0:
        raise ValueError("a credit must be a positive integer of micro-USD")
    post_entry(
        session,
        kind=kind,
        memo=memo,
        reference=reference,
        real_money=real_money,
        now=now,
        postings=[(source, -amount_micro), (books.wallet_code(account_id), amount_micro)],
    )


def charge(
    session: Session,
    account_id: str,
    amount_micro: int,
    *,
    sink: str,
    kind: str,
    memo: str,
    now: datetime,
    reference: str | None = None,
) -> None:
    """Take from a wallet's spendable balance; raises InsufficientFunds, writing nothing."""
    if type(amount_micro) is not int or amount_micro <= 0:
        raise ValueError("a charge must be a positive integer of micro-USD")
    settle_lapsed_holds(session, now=now, account_id=account_id)
    post_entry(
        session,
        kind=kind,
        memo=memo,
        reference=reference,
        now=now,
        postings=[(books.wallet_code(account_id), -amount_micro), (sink, amount_micro)],
    )
