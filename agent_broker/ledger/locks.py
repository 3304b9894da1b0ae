"""Row locks on wallets, taken in one fixed order.

A transaction that will move several wallets (finalize: the poster, the opener, every
competing opener whose hold is released) locks them all up front, ordered by wallet code,
before it touches any hold. Every other path locks a wallet before that wallet's holds
(see holds._settle), so no two transactions can wait on each other in a cycle. SQLite
serialises writers anyway, so there these take no lock and cost no query."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from agent_broker.ledger import repository
from agent_broker.ledger.books import wallet_code


def _serialised(session: Session) -> bool:
    # SQLite has one writer at a time: a lock statement would be a wasted round trip.
    return session.bind.dialect.name == "sqlite"


def lock_wallets(session: Session, account_ids: Iterable[str]) -> None:
    codes = sorted({wallet_code(account_id) for account_id in account_ids})
    if codes and not _serialised(session):
        repository.lock_wallets(session, codes)


def lock_wallet_of_hold(session: Session, hold_id: str) -> None:
    """Lock the wallet a hold belongs to (one round trip), before the hold is settled."""
    if not _serialised(session):
        repository.lock_wallet_of_hold(session, hold_id)
