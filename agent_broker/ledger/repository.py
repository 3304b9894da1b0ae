"""The ledger's statements: journal entries and postings, wallet balances, holds and wallet
locks. Hot ones are prepared (agent_broker.db.prepared); where the session can send a
statement with its next round trip, the function chooses so, and its caller sees one
operation whatever the session."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import String, any_, bindparam, func, insert, select, union_all, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, saves_round_trips
from agent_broker.ledger.models import Hold, JournalEntry, LedgerAccount, Posting

# Prepared statements, not ORM objects: an entry is written on every paid request, and
# the unit of work's bookkeeping cost more than the statements themselves.
_entries = JournalEntry.__table__
_postings = Posting.__table__
_wallet = LedgerAccount.__table__
_holds = Hold.__table__

# Journal entries and their postings.

_INSERT_ENTRY = Prepared(
    insert(_entries)
    .values(
        id=bindparam("id"),
        kind=bindparam("kind"),
        memo=bindparam("memo"),
        reference=bindparam("reference"),
        real_money=bindparam("real_money"),
        created_at=bindparam("created_at"),
    )
    .returning(_entries.c.sequence)
)


@functools.cache
def _inserting_postings(count: int) -> Prepared:
    """One statement writing an entry's `count` postings, in the entry's order, as single
    inserts would (nearly every entry has two: a wallet and a book)."""
    return Prepared(
        insert(_postings).values(
            [
                {
                    "entry_sequence": bindparam("sequence"),
                    "account_code": bindparam(f"code{i}"),
                    "amount_micro": bindparam(f"amount{i}"),
                }
                for i in range(count)
            ]
        )
    )


def _entry_with_pair(dialect_name: str) -> Any:
    """PostgreSQL: the entry and its two postings in one statement (the entry's INSERT as a
    WITH clause whose RETURNING feeds the postings), so the caller need not wait for the
    entry's sequence and the whole entry can go with the next round trip. The postings
    keep the entry's order, as _inserting_postings writes them."""
    assert dialect_name == "postgresql", "SQLite writes the entry, then its postings"
    entry = _INSERT_ENTRY.statement.cte("entry")  # type: ignore[union-attr]
    pair = [
        select(
            entry.c.sequence,
            bindparam(f"code{i}", type_=_postings.c.account_code.type),
            bindparam(f"amount{i}", type_=_postings.c.amount_micro.type),
        )
        for i in (0, 1)
    ]
    return insert(_postings).from_select(
        ["entry_sequence", "account_code", "amount_micro"], union_all(*pair)
    )


_INSERT_ENTRY_WITH_PAIR = Prepared(_entry_with_pair)


def insert_entry(
    session: Session,
    postings: Sequence[tuple[str, int]],
    *,
    entry_id: str,
    kind: str,
    memo: str,
    reference: str | None,
    real_money: bool,
    created_at: datetime,
) -> None:
    """Write a journal entry and its postings, in the order given. Where the session saves
    round trips, an entry of two postings is one statement sent with the next round trip;
    otherwise the entry is written first, for its sequence."""
    entry = {
        "id": entry_id,
        "kind": kind,
        "memo": memo,
        "reference": reference,
        "real_money": real_money,
        "created_at": created_at,
    }
    lines: dict[str, Any] = {}
    for i, (code, amount) in enumerate(postings):
        lines[f"code{i}"], lines[f"amount{i}"] = code, amount
    if len(postings) == 2 and saves_round_trips(session):
        _INSERT_ENTRY_WITH_PAIR.queue(session, **entry, **lines)
        return
    sequence = _INSERT_ENTRY.scalar(session, **entry)
    _inserting_postings(len(postings)).queue(session, sequence=sequence, **lines)


# Wallet balances.

# A debit lands only if the spendable balance covers it: the database refuses overdrafts.
_DEBIT = Prepared(
    update(_wallet)
    .where(_wallet.c.code == bindparam("code"))
    .where(_wallet.c.total_micro - _wallet.c.held_micro >= bindparam("covered"))
    .values(total_micro=_wallet.c.total_micro - bindparam("covered"))
)
_CREDIT = Prepared(
    update(_wallet)
    .where(_wallet.c.code == bindparam("code"))
    .values(total_micro=_wallet.c.total_micro + bindparam("amount"))
)
_CREDIT_REAL = Prepared(
    update(_wallet)
    .where(_wallet.c.code == bindparam("code"))
    .values(total_micro=_wallet.c.total_micro + bindparam("amount"), funded=True)
)


def debit_wallet(session: Session, code: str, amount: int) -> bool:
    """Take `amount` from the wallet if its spendable balance covers it; whether it did."""
    return _DEBIT.execute(session, code=code, covered=amount) == 1


def credit_wallet(session: Session, code: str, amount: int, *, real_money: bool) -> bool:
    """Add `amount` to the wallet (real money also marks it funded); whether it exists."""
    statement = _CREDIT_REAL if real_money else _CREDIT
    return statement.execute(session, code=code, amount=amount) == 1


_LAPSED = (
    select(func.coalesce(func.sum(Hold.amount_micro), 0))
    .where(
        Hold.wallet_code == bindparam("code"),
        Hold.status == "active",
        Hold.expires_at <= bindparam("now"),
    )
    .scalar_subquery()
    .label("lapsed_micro")
)
_WALLET_AS_OF = Prepared(
    select(
        LedgerAccount.total_micro, LedgerAccount.held_micro, LedgerAccount.funded, _LAPSED
    ).where(LedgerAccount.code == bindparam("code"))
)
_FUNDED = Prepared(select(LedgerAccount.funded).where(LedgerAccount.code == bindparam("code")))


def wallet_as_of(session: Session, code: str, now: datetime) -> Any:
    """The wallet's total_micro, held_micro and funded, with lapsed_micro: what its active
    holds lapsed by `now` hold."""
    return _WALLET_AS_OF.one(session, code=code, now=now)


def is_funded(session: Session, code: str) -> bool:
    return bool(_FUNDED.scalar(session, code=code))


# Holds.

_RESERVE = Prepared(
    update(_wallet)
    .where(_wallet.c.code == bindparam("code"))
    .where(_wallet.c.total_micro - _wallet.c.held_micro >= bindparam("amount"))
    .values(held_micro=_wallet.c.held_micro + bindparam("amount"))
)
_UNRESERVE = Prepared(
    update(_wallet)
    .where(_wallet.c.code == bindparam("code"))
    .values(held_micro=_wallet.c.held_micro - bindparam("amount"))
)
_INSERT_HOLD = Prepared(
    insert(_holds).values(
        id=bindparam("id"),
        wallet_code=bindparam("code"),
        amount_micro=bindparam("amount"),
        status="active",
        reference=bindparam("reference"),
        created_at=bindparam("now"),
        expires_at=bindparam("expires_at"),
    )
)
_SETTLE = Prepared(
    update(_holds)
    .where(_holds.c.id == bindparam("hold_id"), _holds.c.status == "active")
    .values(status=bindparam("status"), settled_at=bindparam("now"))
    .returning(_holds.c.wallet_code, _holds.c.amount_micro, _holds.c.reference)
)
_SETTLE_LIVE = Prepared(
    update(_holds)
    .where(
        _holds.c.id == bindparam("hold_id"),
        _holds.c.status == "active",
        _holds.c.expires_at > bindparam("now"),
    )
    .values(status=bindparam("status"), settled_at=bindparam("now"))
    .returning(_holds.c.wallet_code, _holds.c.amount_micro, _holds.c.reference)
)
_LAPSED_OF_WALLET = Prepared(
    select(_holds.c.id)
    .where(
        _holds.c.status == "active",
        _holds.c.expires_at <= bindparam("now"),
        _holds.c.wallet_code == bindparam("code"),
    )
    .order_by(_holds.c.expires_at)
    .limit(bindparam("limit"))
)


def reserve(session: Session, code: str, amount: int) -> bool:
    """Set `amount` aside in the wallet if its spendable balance covers it; whether it did."""
    return _RESERVE.execute(session, code=code, amount=amount) == 1


def unreserve(session: Session, code: str, amount: int) -> None:
    """Give `amount` set aside in the wallet back to spendable."""
    _UNRESERVE.queue(session, code=code, amount=amount)


def insert_hold(
    session: Session,
    *,
    hold_id: str,
    code: str,
    amount: int,
    reference: str,
    now: datetime,
    expires_at: datetime,
) -> None:
    """Write an active hold (its amount already reserved in the wallet)."""
    _INSERT_HOLD.queue(
        session,
        id=hold_id,
        code=code,
        amount=amount,
        reference=reference,
        now=now,
        expires_at=expires_at,
    )


def settle_hold(
    session: Session, hold_id: str, status: str, now: datetime, *, live_only: bool
) -> Any:
    """Move an active hold (with `live_only`, one not lapsed by `now`) to `status`; its
    wallet_code, amount_micro and reference, or None when no such hold was there."""
    statement = _SETTLE_LIVE if live_only else _SETTLE
    return statement.one_or_none(session, hold_id=hold_id, status=status, now=now)


def lapsed_hold_ids(
    session: Session, *, now: datetime, limit: int, code: str | None = None
) -> list[str]:
    """Active holds lapsed by `now`: the wallet's (`code`) or every wallet's."""
    if code is not None:
        rows = _LAPSED_OF_WALLET.all(session, now=now, code=code, limit=limit)
    else:
        # Wallet by wallet in code order, the order finalize locks them in (ledger.locks).
        rows = session.execute(
            select(_holds.c.id)
            .where(_holds.c.status == "active", _holds.c.expires_at <= now)
            .order_by(_holds.c.wallet_code, _holds.c.expires_at)
            .limit(limit)
        ).all()
    return [hold_id for (hold_id,) in rows]


# Wallet locks (PostgreSQL; ledger.locks says when they are taken).

# The codes as one array, so one prepared statement serves any number of wallets.
_LOCK_WALLETS = Prepared(
    select(_wallet.c.code)
    .where(_wallet.c.code == any_(bindparam("codes", type_=ARRAY(String))))
    .order_by(_wallet.c.code)
    .with_for_update()
)


def lock_wallets(session: Session, codes: list[str]) -> None:
    """Lock the wallets' rows, in code order."""
    _LOCK_WALLETS.all(session, codes=codes)


def lock_wallet_of_hold(session: Session, hold_id: str) -> None:
    """Lock the row of the wallet a hold belongs to (one round trip)."""
    owner = select(Hold.wallet_code).where(Hold.id == hold_id).scalar_subquery()
    session.execute(select(_wallet.c.code).where(_wallet.c.code == owner).with_for_update())
