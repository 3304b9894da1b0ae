from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
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
    # The poster's role in this deal (seller on a sell listing, buyer on a buy listing).
    poster_role: Mapped[str] = mapped_column(String(6))
    # Whether either side was ever funded with real money at seal: only then does the deal
    # move reputation counters.
    counts_for_reputation: Mapped[bool] = mapped_column(Boolean)
    # "escrow": the price is held by the broker (agent_broker.escrow), "direct" otherwise.
    settlement: Mapped[str] = mapped_column(String(6), default="direct", server_default="direct")
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


class Rating(Base):
    """One party's rating of the other for one deal; final once given."""

    __tablename__ = "deal_ratings"
    __table_args__ = (
        UniqueConstraint("deal_id", "rater_id", name="uq_deal_ratings_deal_rater"),
        CheckConstraint("score BETWEEN 1 AND 5", name="score"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deal_id: Mapped[str] = mapped_column(ForeignKey("deals.id"))
    rater_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    ratee_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    ratee_role: Mapped[str] = mapped_column(String(6))
    score: Mapped[int] = mapped_column(Integer)
    delivered: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Dispute(Base):
    """A recorded claim against the counterparty; nothing is adjudicated, no money moves."""

    __tablename__ = "deal_disputes"
    __table_args__ = (UniqueConstraint("deal_id", "filer_id", name="uq_deal_disputes_deal_filer"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deal_id: Mapped[str] = mapped_column(ForeignKey("deals.id"))
    filer_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    against_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    counts_for_reputation: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
