"""Double-entry journal. Every balance change is one entry whose postings sum to zero,
written in the caller's transaction together with the wallet balances it moves."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared
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
) -> int:
    """Write one journal entry and move the wallet balances it names; its sequence.

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

    sequence = _INSERT_ENTRY.scalar(
        session,
        id=str(uuid.uuid4()),
        kind=kind,
        memo=memo[:500],
        reference=reference,
        real_money=real_money,
        created_at=now,
    )
    if len(postings) == 2:
        (code0, amount0), (code1, amount1) = postings
        _INSERT_POSTING_PAIR.execute(
            session, sequence=sequence, code0=code0, amount0=amount0, code1=code1, amount1=amount1
        )
    else:
        for code, amount in postings:
            _INSERT_POSTING.execute(session, sequence=sequence, code=code, amount=amount)
    return int(sequence)


def _move_wallet(session: Session, code: str, amount: int, *, real_money: bool) -> None:
    if amount < 0:
        if _DEBIT.execute(session, code=code, covered=-amount) != 1:
            raise InsufficientFunds()
        return
    statement = _CREDIT_REAL if real_money else _CREDIT
    if statement.execute(session, code=code, amount=amount) != 1:
        raise LookupError(f"no wallet {code}")
