"""Double-entry journal. Every balance change is one entry whose postings sum to zero,
written in the caller's transaction together with the wallet balances it moves."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from agent_broker.ledger.books import is_wallet
from agent_broker.ledger.errors import InsufficientFunds, UnbalancedEntry
from agent_broker.ledger.models import JournalEntry, LedgerAccount, Posting

_entries = JournalEntry.__table__
_INSERT_ENTRY = insert(_entries).returning(_entries.c.sequence)
_INSERT_POSTINGS = insert(Posting.__table__)


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

    # Prebuilt Core inserts, not ORM objects: an entry is written on every paid request, and
    # the unit of work's bookkeeping cost more than the two statements themselves.
    sequence = session.execute(
        _INSERT_ENTRY,
        {
            "id": str(uuid.uuid4()),
            "kind": kind,
            "memo": memo[:500],
            "reference": reference,
            "real_money": real_money,
            "created_at": now,
        },
    ).scalar_one()
    session.execute(
        _INSERT_POSTINGS,
        [
            {"entry_sequence": sequence, "account_code": code, "amount_micro": amount}
            for code, amount in postings
        ],
    )
    return sequence


def _move_wallet(session: Session, code: str, amount: int, *, real_money: bool) -> None:
    wallet = LedgerAccount.__table__
    if amount < 0:
        result = session.execute(
            update(wallet)
            .where(wallet.c.code == code)
            .where(wallet.c.total_micro - wallet.c.held_micro >= -amount)
            .values(total_micro=wallet.c.total_micro + amount)
        )
        if result.rowcount != 1:
            raise InsufficientFunds()
        return
    values: dict[str, object] = {"total_micro": wallet.c.total_micro + amount}
    if real_money:
        values["funded"] = True
    result = session.execute(update(wallet).where(wallet.c.code == code).values(**values))
    if result.rowcount != 1:
        raise LookupError(f"no wallet {code}")
