"""Double-entry journal. Every balance change is one entry whose postings sum to zero,
written in the caller's transaction together with the wallet balances it moves."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker.ledger import repository
from agent_broker.ledger.books import is_wallet
from agent_broker.ledger.errors import InsufficientFunds, UnbalancedEntry


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

    repository.insert_entry(
        session,
        postings,
        entry_id=str(uuid.uuid4()),
        kind=kind,
        memo=memo[:500],
        reference=reference,
        real_money=real_money,
        created_at=now,
    )


def _move_wallet(session: Session, code: str, amount: int, *, real_money: bool) -> None:
    if amount < 0:
        if not repository.debit_wallet(session, code, -amount):
            raise InsufficientFunds()
        return
    if not repository.credit_wallet(session, code, amount, real_money=real_money):
        raise LookupError(f"no wallet {code}")
