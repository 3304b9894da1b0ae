from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint("status IN ('active', 'inactive')", name="status"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    handle: Mapped[str] = mapped_column(String(12), unique=True)
    # HMAC-SHA256 of the API key under BROKER_KEY_HASH_SECRET; the key itself is never kept.
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_preview: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(10), default="active")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    contact_name: Mapped[str | None] = mapped_column(String(200))
    contact_email: Mapped[str | None] = mapped_column(String(254))
    contact_url: Mapped[str | None] = mapped_column(String(2048))
    deal_route: Mapped[str | None] = mapped_column(String(2048))
    route_protocol_binding: Mapped[str | None] = mapped_column(String(300))
    agent_card_url: Mapped[str | None] = mapped_column(String(2048))
