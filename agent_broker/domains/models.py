"""Domain proof and the welcome-credit grant."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class DomainClaim(Base):
    """A registrable domain an account proved it controls. Claims are never removed."""

    __tablename__ = "domain_claims"
    __table_args__ = (
        UniqueConstraint("account_id", "domain", name="uq_domain_claims_account_domain"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    domain: Mapped[str] = mapped_column(String(253), index=True)
    verified_at: Mapped[datetime] = mapped_column(UTCDateTime())


class DomainGrant(Base):
    """The welcome credit a proof earned: one per account and one per domain, ever. The
    row is written when the proof succeeds (pending while the daily cap holds it back)
    and paid at most once. It names the account without a foreign key so that it
    outlives the account: a domain that was paid never pays again."""

    __tablename__ = "domain_grants"
    __table_args__ = (
        UniqueConstraint("account_id", name="uq_domain_grants_account_id"),
        UniqueConstraint("domain", name="uq_domain_grants_domain"),
        CheckConstraint("status IN ('pending', 'paid')", name="status"),
        CheckConstraint("amount_micro >= 0", name="amount_micro_non_negative"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(String(36))
    domain: Mapped[str] = mapped_column(String(253))
    status: Mapped[str] = mapped_column(String(10))
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime())
    amount_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class DomainGrantDay(Base):
    """Grants paid on one UTC day: the row the deployment-wide daily cap is counted on
    (an UPDATE ... WHERE paid < cap, so concurrent payers queue on its row lock)."""

    __tablename__ = "domain_grant_days"

    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # YYYY-MM-DD, UTC
    paid: Mapped[int] = mapped_column(Integer, default=0)
