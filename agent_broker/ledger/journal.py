"""Double-entry journal. Every balance change is one entry whose postings sum to zero,
written in the caller's transaction together with the wallet balances it moves."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, union_all, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, saves_round_trips
from agent_broker.ledger.books import is_wallet
from agent_broker.ledger.errors import InsufficientFunds, UnbalancedEntry
from agent_broker.ledger.models import JournalEntry, LedgerAccount, Posting

# Prepared statements, not ORM objects: an entry is written on every paid request, and
# the unit of work's bookkeeping cost more than the statements themselves.
_entries = JournalEntry.__table__
_postings = Posting.__table__
_wallet = LedgerAccount.__table__
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
_INSERT_POSTING = Prepared(
    insert(_postings).values(
        entry_sequence=bindparam("sequence"),
        account_code=bindparam("code"),
        amount_micro=bindparam("amount"),
    )
)
# Nearly every entry has two postings (a wallet and a book): one statement writes both,
# in the entry's order, as two single inserts would.
_INSERT_POSTING_PAIR = Prepared(
    insert(_postings).values(
        [
            {
                "entry_sequence": bindparam("sequence"),
                "account_code": bindparam(f"code{i}"),
                "amount_micro": bindparam(f"amount{i}"),
            }
            for i in (0, 1)
        ]
    )
)


def _entry_with_pair(dialect_name: str) -> Any:
    """PostgreSQL: the entry and its two postings in one statement (the entry's INSERT as a
    WITH clause whose RETURNING feeds the postings), so the caller need not wait for the
    entry's sequence and the whole entry can go with the next round trip. The postings
    keep the entry's order, as _INSERT_POSTING_PAIR writes them."""
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


def post_entry(
    session: Session,
    *,
    kind: str,
    memo: str,
    postings: Sequence[tuple[str, int]],
    now: datetime,
    reference: str | None = None,
    real_money: bool = False,
) -> None:
    """Write one journal entry and move the wallet balances it names.

    A wallet debit is one conditional UPDATE (spendable >= amount), so the database, not
    a read in Python, refuses to overdraw under any concurrency. Wallet rows are touched
    in code order so two entries never lock the same pair in opposite orders."""
    if not postings:
        raise UnbalancedEntry("an entry needs postings")
    for code, amount in postings:
        if type(amount) is not int or amount == 0:
            raise UnbalancedEntry(f"posting to {code} must be a non-zero integer, got {amount!r}")
    if sum(amount for _, amount in postings) != 0:
        raise UnbalancedEntry("postings of one entry must sum to zero")

    for code, amount in sorted(postings):
        if is_wallet(code):
            _move_wallet(session, code, amount, real_money=real_money)

    entry = {
        "id": str(uuid.uuid4()),
        "kind": kind,
        "memo": memo[:500],
        "reference": reference,
        "real_money": real_money,
        "created_at": now,
    }
    pair = None
    if len(postings) == 2:
        (code0, amount0), (code1, amount1) = postings
        pair = {"code0": code0, "amount0": amount0, "code1": code1, "amount1": amount1}
        if saves_round_trips(session):
            _INSERT_ENTRY_WITH_PAIR.queue(session, **entry, **pair)
            return
    sequence = _INSERT_ENTRY.scalar(session, **entry)
    if pair is not None:
        _INSERT_POSTING_PAIR.queue(session, sequence=sequence, **pair)
        return
    for code, amount in postings:
        _INSERT_POSTING.queue(session, sequence=sequence, code=code, amount=amount)


def _move_wallet(session: Session, code: str, amount: int, *, real_money: bool) -> None:
    if amount < 0:
        if _DEBIT.execute(session, code=code, covered=-amount) != 1:
            raise InsufficientFunds()
        return
    statement = _CREDIT_REAL if real_money else _CREDIT
    if statement.execute(session, code=code, amount=amount) != 1:
        raise LookupError(f"no wallet {code}")
