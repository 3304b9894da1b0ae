from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class HealthSample(Base):
    """One result of the service probing its own health (the `health-sample` job);
    /status.json is derived from these. Kept for 31 days."""

    __tablename__ = "health_samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    # "ok", or the failed checks in a fixed vocabulary ("database: OperationalError");
    # never an exception message, which could quote a connection string.
    detail: Mapped[str] = mapped_column(String(200))
