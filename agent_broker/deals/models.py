from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Deal(Base):
    """A sealed thread. Each side's coordinates are copied at seal time, so the reveal
    stays what both parties agreed to, and the purge erases them for good."""

    __tablename__ = "deals"
    __table_args__ = (
        CheckConstraint("status IN ('active', 'purged')", name="status"),
        Index("ix_deals_purge", "status", "purge_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    thread_id: Mapped[str] = mapped_column(ForeignKey("threads.id"), unique=True)
    listing_id: Mapped[str] = mapped_column(ForeignKey("listings.id"))
    poster_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    negotiator_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    reveal_at: Mapped[datetime] = mapped_column(UTCDateTime())
    purge_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Per side: the opaque per-deal route hash and the coordinates revealed to the other
    # side. Nulled by the purge.
    poster_route_hash: Mapped[str | None] = mapped_column(String(32))
    poster_route: Mapped[str | None] = mapped_column(String(2048))
    poster_binding: Mapped[str | None] = mapped_column(String(300))
    poster_card_url: Mapped[str | None] = mapped_column(String(2048))
    poster_contact_name: Mapped[str | None] = mapped_column(String(200))
    poster_contact_email: Mapped[str | None] = mapped_column(String(254))
    poster_contact_url: Mapped[str | None] = mapped_column(String(2048))
    negotiator_route_hash: Mapped[str | None] = mapped_column(String(32))
    negotiator_route: Mapped[str | None] = mapped_column(String(2048))
    negotiator_binding: Mapped[str | None] = mapped_column(String(300))
    negotiator_card_url: Mapped[str | None] = mapped_column(String(2048))
    negotiator_contact_name: Mapped[str | None] = mapped_column(String(200))
    negotiator_contact_email: Mapped[str | None] = mapped_column(String(254))
    negotiator_contact_url: Mapped[str | None] = mapped_column(String(2048))

    SIDES = ("poster", "negotiator")
    COORDINATES = (
        "route_hash",
        "route",
        "binding",
        "card_url",
        "contact_name",
        "contact_email",
        "contact_url",
    )
