from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class DomainClaim(Base):
    """A registrable domain an account proved it controls."""

    __tablename__ = "domain_claims"
    __table_args__ = (
        UniqueConstraint("account_id", "domain", name="uq_domain_claims_account_domain"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    domain: Mapped[str] = mapped_column(String(253), index=True)
    verified_at: Mapped[datetime] = mapped_column(UTCDateTime())
    grant_paid: Mapped[bool] = mapped_column(Boolean, default=False)
