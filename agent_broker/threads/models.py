from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Thread(Base):
    __tablename__ = "threads"
    __table_args__ = (
        CheckConstraint("status IN ('open', 'rejected', 'finalized', 'closed')", name="status"),
        CheckConstraint("turn IN ('poster', 'negotiator')", name="turn"),
        Index("ix_threads_listing", "listing_id", "created_at"),
        Index("ix_threads_opener", "opener_id", "created_at"),
        Index("ix_threads_poster", "poster_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    listing_id: Mapped[str] = mapped_column(ForeignKey("listings.id"))
    poster_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    opener_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    status: Mapped[str] = mapped_column(String(10))
    turn: Mapped[str] = mapped_column(String(10))
    diff: Mapped[str] = mapped_column(Text)
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    # The opener's escrow hold for the deal fee (a ledger hold id).
    hold_id: Mapped[str] = mapped_column(String(36))
    # The last price an offer named; None: the listing's price.
    price_micro: Mapped[int | None] = mapped_column(BigInteger)
    # On an escrow sell listing, the opener's (the buyer's) hold for that price.
    price_hold_id: Mapped[str | None] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The thread's life: past it, an open thread counts as closed and its hold lapses.
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
