from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Listing(Base):
    __tablename__ = "listings"
    __table_args__ = (
        CheckConstraint("status IN ('live', 'matched', 'expired', 'cancelled')", name="status"),
        CheckConstraint("listing_type IN ('buy', 'sell')", name="listing_type"),
        CheckConstraint("price_micro >= 0", name="price_non_negative"),
        # The feed walks these newest first, keyset-paginated on (created_at, id).
        Index("ix_listings_feed", "status", "created_at", "id"),
        Index("ix_listings_feed_category", "category", "status", "created_at", "id"),
        Index("ix_listings_feed_type", "listing_type", "status", "created_at", "id"),
        # The price orders of the feed (sort=price_asc, price_desc).
        Index("ix_listings_feed_price", "status", "price_micro", "created_at", "id"),
        # Text search lives outside the model: FTS5 on SQLite, a tsvector column on
        # PostgreSQL (migration 0017, agent_broker.listings.repository).
        # No (status, expires_at) index on purpose: SQLite would prefer it for the feed's
        # expiry filter and then sort every live listing. The expiry job walks ix_listings_feed.
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    poster_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    # The poster's public handle, fixed for the account's life, kept here for the feed.
    poster_handle: Mapped[str] = mapped_column(String(12))
    status: Mapped[str] = mapped_column(String(10))
    listing_type: Mapped[str] = mapped_column(String(4))
    category: Mapped[str] = mapped_column(String(32))
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    price_micro: Mapped[int] = mapped_column(BigInteger)
    delivery_deadline_days: Mapped[int | None] = mapped_column(Integer)
    # "direct": the price is paid between the parties; "escrow": the broker holds it from
    # the seal until delivery is accepted or ruled (agent_broker.escrow).
    settlement: Mapped[str] = mapped_column(String(6), default="direct", server_default="direct")
    delivery_hours: Mapped[int | None] = mapped_column(Integer)
    acceptance_hours: Mapped[int | None] = mapped_column(Integer)
    # None on an escrow listing: the operator evaluates.
    # (No foreign key: a column added in place, as SQLite adds it, without a table rebuild
    # that would drop the feed search's triggers.)
    evaluator_id: Mapped[str | None] = mapped_column(String(36))
    evaluator_handle: Mapped[str | None] = mapped_column(String(12))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
