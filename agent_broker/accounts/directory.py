"""What other features may ask of the accounts table: an account by public handle, and
creation times. They never query the table themselves."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.accounts import repository
from agent_broker.accounts.models import Account

_HEX = frozenset("0123456789abcdef")


def find_by_handle(session: Session, handle: str) -> Account | None:
    # Malformed and unknown handles are alike to the caller: both find nothing.
    if len(handle) != 12 or not _HEX.issuperset(handle):
        return None
    return session.scalars(select(Account).where(Account.handle == handle)).one_or_none()


def created_at_of(session: Session, account_ids: Iterable[str]) -> dict[str, datetime]:
    ids = list(account_ids)
    if not ids:
        return {}
    return repository.created_at_of(session, ids)
