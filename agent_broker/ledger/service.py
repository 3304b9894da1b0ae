"""What the rest of the service may ask of the ledger. Only this package moves money."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.ledger import books, repository
from agent_broker.ledger.errors import InsufficientFunds
from agent_broker.ledger.events import fee_captured
from agent_broker.ledger.holds import capture_hold, release_hold, settle_lapsed_holds, take_hold
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.locks import lock_wallets
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
    "lock_wallets",
    "is_funded",
    "funded_accounts",
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
    """The wallet as of `now`, lapsed holds counted as given back.

    A pure read, so read-only requests never take a write lock: the lapsed holds' rows
    are settled by the next write on this wallet or by the expire-holds job, and both
    arrive at exactly these figures."""
    row = repository.wallet_as_of(session, books.wallet_code(account_id), now)
    held = row.held_micro - int(row.lapsed_micro)
    return WalletView(
        spendable_micro=row.total_micro - held, held_micro=held, funded=bool(row.funded)
    )


def is_funded(session: Session, account_id: str) -> bool:
    return repository.is_funded(session, books.wallet_code(account_id))


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
    postings = [(books.wallet_code(account_id), -amount_micro), (sink, amount_micro)]
    try:
        post_entry(session, kind=kind, memo=memo, reference=reference, now=now, postings=postings)
    except InsufficientFunds:
        # Lapsed holds give money back: settle them and try once more. Only then, since
        # almost every charge is covered without (the wallet's debit wrote nothing).
        if not settle_lapsed_holds(session, now=now, account_id=account_id):
            raise
        post_entry(session, kind=kind, memo=memo, reference=reference, now=now, postings=postings)
    if sink == books.FEES:
        fee_captured(session, kind=kind, amount_micro=amount_micro)


def funded_accounts(session: Session, account_ids: set[str]) -> set[str]:
    """Which of these accounts were ever funded with real money (one query)."""
    if not account_ids:
        return set()
    if len(account_ids) == 1:  # a single listing or deal: the prepared lookup
        (only,) = account_ids
        return {only} if is_funded(session, only) else set()
    codes = {books.wallet_code(a) for a in account_ids}
    rows = session.scalars(
        select(LedgerAccount.owner_id).where(
            LedgerAccount.code.in_(codes), LedgerAccount.funded.is_(True)
        )
    )
    return {owner for owner in rows if owner}
