"""Row locks on wallets, taken in one fixed order.

A transaction that will move several wallets (finalize: the poster, the opener, every
competing opener whose hold is released) locks them all up front, ordered by wallet code,
before it touches any hold. Every other path locks a wallet before that wallet's holds
(see holds._settle), so no two transactions can wait on each other in a cycle. SQLite
serialises writers anyway, so there these take no lock and cost no query."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import String, any_, bindparam, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared
from agent_broker.ledger.books import wallet_code
from agent_broker.ledger.models import Hold, LedgerAccount

_wallets = LedgerAccount.__table__
# PostgreSQL only (SQLite takes no locks): the codes as one array, so one prepared statement
# serves any number of wallets.
_LOCK_WALLETS = Prepared(
    select(_wallets.c.code)
    .where(_wallets.c.code == any_(bindparam("codes", type_=ARRAY(String))))
    .order_by(_wallets.c.code)
    .with_for_update()
)


def _serialised(session: Session) -> bool:
    # SQLite has one writer at a time: a lock statement would be a wasted round trip.
    return session.bind.dialect.name == "sqlite"


def lock_wallets(session: Session, account_ids: Iterable[str]) -> None:
    codes = sorted({wallet_code(account_id) for account_id in account_ids})
    if codes and not _serialised(session):
        _LOCK_WALLETS.all(session, codes=codes)


def lock_wallet_of_hold(session: Session, hold_id: str) -> None:
    """Lock the wallet a hold belongs to (one round trip), before the hold is settled."""
    if _serialised(session):
        return
    owner = select(Hold.wallet_code).where(Hold.id == hold_id).scalar_subquery()
    session.execute(select(_wallets.c.code).where(_wallets.c.code == owner).with_for_update())
