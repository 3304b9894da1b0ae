"""An account's certification record and the results of the probes of its deal route."""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import Boolean, CheckConstraint, Date, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Certification(Base):
    """One row per account that ever tested or subscribed: the subscription, the evidence
    window (the route whose checks count, and since when) and the last free test."""

    __tablename__ = "certifications"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    renew: Mapped[bool] = mapped_column(Boolean, default=False)
    period_start: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    period_end: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    window_route: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    window_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    public_certified: Mapped[bool] = mapped_column(Boolean, default=False)
    checked_on: Mapped[date | None] = mapped_column(Date, nullable=True)
    last_test_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_test_route: Mapped[str | None] = mapped_column(String(2048), nullable=True)
    last_test_passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    last_test_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_test_detail: Mapped[str | None] = mapped_column(String(300), nullable=True)


class CertificationCheck(Base):
    """One probe of a deal route: a free test (never counted for the badge) or a
    scheduled check of a subscribed route."""

    __tablename__ = "certification_checks"
    __table_args__ = (CheckConstraint("kind IN ('test', 'scheduled')", name="kind"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    kind: Mapped[str] = mapped_column(String(10))
    route: Mapped[str] = mapped_column(String(2048))
    checked_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    passed: Mapped[bool] = mapped_column(Boolean)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    detail: Mapped[str] = mapped_column(String(300))
