from __future__ import annotations

from sqlalchemy import CheckConstraint, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base


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
