"""The deals' statements, prepared (agent_broker.db.prepared): the deal's insert at the
seal, its read, and the later purge an escrow's settlement sets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, inserting
from agent_broker.deals.models import Deal

_deals = Deal.__table__
_INSERT = inserting(_deals, returning=True)
_DEAL = Prepared(select(_deals).where(_deals.c.id == bindparam("deal_id")))
_EXTEND_PURGE = Prepared(
    update(_deals)
    .where(_deals.c.id == bindparam("deal_id"), _deals.c.purge_at < bindparam("until"))
    .values(purge_at=bindparam("until"))
)


def insert(session: Session, **columns: Any) -> Any:
    """Insert a deal, given every column; its row, made from those values where the insert
    goes with the session's next round trip."""
    return _INSERT.queue_row(session, **columns)


def find(session: Session, deal_id: str) -> Any:
    """The deal's row, or None."""
    return _DEAL.one_or_none(session, deal_id=deal_id)


def extend_purge(session: Session, deal_id: str, *, purge_at: datetime) -> None:
    """Purge the deal no earlier than `purge_at`."""
    _EXTEND_PURGE.queue(session, deal_id=deal_id, until=purge_at)
