"""An account's events: the log every account reads (GET /v1/events and its stream), and
the webhook endpoint with the outbox of events waiting to reach it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class WebhookEndpoint(Base):
    """Where an account's events go, and the secret they are signed with (Standard
    Webhooks; shown to the account once, kept here to sign with)."""

    __tablename__ = "webhook_endpoints"

    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), primary_key=True)
    url: Mapped[str] = mapped_column(String(2048))
    secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class WebhookEvent(Base):
    """One event for one account, written in the transaction of what it reports. Events of
    one thread or deal (`subject`) are delivered one at a time, in `sequence` order."""

    __tablename__ = "webhook_events"
    __table_args__ = (
        Index("ix_webhook_events_subject", "account_id", "subject", "sequence"),
        Index("ix_webhook_events_due", "delivered_at", "failed_at", "next_attempt_at"),
    )

    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)  # the webhook-id header
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    subject: Mapped[str] = mapped_column(String(36))
    type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(String(300), nullable=True)


class AccountEvent(Base):
    """One event for one account, kept BROKER_EVENT_RETENTION_HOURS whether or not the
    account has a webhook endpoint, written in the transaction of what it reports. Its id
    is the webhook-id of the same event's webhook, so a client using both sees one event.

    `txid` (PostgreSQL only) is the writing transaction's id: a reader takes only events
    of transactions older than every one still running, so a later event whose
    transaction committed first is never read before an earlier one still in flight
    (which a reader moving its cursor past would never see). SQLite's writers take
    turns, so there `sequence` is commit order and `txid` stays empty."""

    __tablename__ = "account_events"
    __table_args__ = (Index("ix_account_events_feed", "account_id", "sequence"),)

    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(40), unique=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    type: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    txid: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
