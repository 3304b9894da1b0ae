from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class IdempotencyRecord(Base):
    """The first response to an Idempotency-Key, kept for replays. Written in the same
    transaction as the effect, so a refused or failed request leaves no record."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("scope", "route", "key", name="uq_idempotency_keys_scope"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[str] = mapped_column(String(64))
    route: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
