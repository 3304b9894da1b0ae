from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class ReputationFacet(Base):
    """Counters for one role of one account; roles are never pooled."""

    __tablename__ = "reputation_facets"
    __table_args__ = (CheckConstraint("role IN ('buyer', 'seller')", name="role"),)

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(6), primary_key=True)
    rating_sum: Mapped[int] = mapped_column(Integer)
    rating_count: Mapped[int] = mapped_column(Integer)
    finalized_count: Mapped[int] = mapped_column(Integer, default=0)
    non_delivery_count: Mapped[int] = mapped_column(Integer, default=0)


class ReputationStats(Base):
    """The scorecard's evidence beyond the facets, kept as running counters so a record is
    read in constant time however long the account's history. Moved in the same
    transaction as the seal, rating or dispute that causes it, and only for counting deals
    (the funded rule); last_active_at is liveness and moves on every billable action."""

    __tablename__ = "reputation_stats"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    disputes: Mapped[int] = mapped_column(Integer, default=0)
    counterparties: Mapped[int] = mapped_column(Integer, default=0)
    first_deal_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_active_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Earned ratings received per score, both roles.
    score_1: Mapped[int] = mapped_column(Integer, default=0)
    score_2: Mapped[int] = mapped_column(Integer, default=0)
    score_3: Mapped[int] = mapped_column(Integer, default=0)
    score_4: Mapped[int] = mapped_column(Integer, default=0)
    score_5: Mapped[int] = mapped_column(Integer, default=0)
    # Reveal-to-rating gaps of ratings received, counted per latency bucket; the median
    # bucket of a histogram is exact, so no individual gap needs keeping.
    latency_0: Mapped[int] = mapped_column(Integer, default=0)
    latency_1: Mapped[int] = mapped_column(Integer, default=0)
    latency_2: Mapped[int] = mapped_column(Integer, default=0)
    latency_3: Mapped[int] = mapped_column(Integer, default=0)
    latency_4: Mapped[int] = mapped_column(Integer, default=0)

    # Escrow deals settled as seller: released (accepted, ruled or by deadline), refunded,
    # split by a ruling, and delivered before deliver_by.
    escrow_released: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    escrow_refunded: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    escrow_split: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    escrow_on_time: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    ESCROW = ("escrow_released", "escrow_refunded", "escrow_split", "escrow_on_time")
    SCORES = ("score_1", "score_2", "score_3", "score_4", "score_5")
    LATENCIES = ("latency_0", "latency_1", "latency_2", "latency_3", "latency_4")


class ReputationCounterparty(Base):
    """One row per pair that sealed a counting deal: distinct counterparties are counted
    when a pair is first seen."""

    __tablename__ = "reputation_counterparties"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    counterparty_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)


class ReputationSales(Base):
    """Counting deals sealed as seller, per listing category (verified capabilities)."""

    __tablename__ = "reputation_sales"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    category: Mapped[str] = mapped_column(String(32), primary_key=True)
    sales: Mapped[int] = mapped_column(Integer, default=0)
