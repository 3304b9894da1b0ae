from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime

# How long a claim holds. A run that outlasts it lets another replica start the same job,
# so a job whose work can grow (webhooks/delivery.py) bounds its run well within it.
LEASE_TTL = timedelta(minutes=10)


class JobLease(Base):
    """Which replica may run a job until when; claimed with one conditional update."""

    __tablename__ = "job_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_outcome: Mapped[str | None] = mapped_column(String(500))
