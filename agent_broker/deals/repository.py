"""The deals' statements: the deal's insert at the seal, prepared (agent_broker.db.prepared)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from agent_broker.db.prepared import inserting
from agent_broker.deals.models import Deal

_INSERT = inserting(Deal.__table__, returning=True)


def insert(session: Session, **columns: Any) -> Any:
    """Insert a deal, given every column; its row, made from those values where the insert
    goes with the session's next round trip."""
    return _INSERT.queue_row(session, **columns)
