"""Invoices and the inbox of processor callbacks."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Invoice(Base):
    """Credits an account asked to buy: what the processor should collect and where."""

    __tablename__ = "invoices"
    __table_args__ = (
        UniqueConstraint("processor", "processor_id", name="uq_invoices_processor_id"),
        CheckConstraint("processor IN ('processor_a', 'processor_b', 'stub')", name="processor"),
        CheckConstraint("status IN ('open', 'paid')", name="status"),
        CheckConstraint("pack_count > 0 AND amount_micro > 0", name="positive"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    processor: Mapped[str] = mapped_column(String(20))
    chain: Mapped[str | None] = mapped_column(String(20))
    pack_count: Mapped[int] = mapped_column(Integer)
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    processor_id: Mapped[str] = mapped_column(String(200))
    payment_url: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(10), default="open")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    paid_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ProcessorEvent(Base):
    """One processor callback that was acted on, unique on the processor's own identity
    of the event: a redelivery finds its row and credits nothing. Written in the same
    transaction as the credit it caused."""

    __tablename__ = "processor_events"
    __table_args__ = (
        UniqueConstraint("processor", "event_key", name="uq_processor_events_event"),
        CheckConstraint("credited_micro >= 0", name="credited_non_negative"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    processor: Mapped[str] = mapped_column(String(20))
    event_key: Mapped[str] = mapped_column(String(300))
    invoice_id: Mapped[str] = mapped_column(ForeignKey("invoices.id"), index=True)
    credited_micro: Mapped[int] = mapped_column(BigInteger)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime())


class X402Payment(Base):
    """One x402 payment authorization, claimed by its nonce before the facilitator is
    asked, so the same authorization, sent again under either protocol version, is refused
    however many arrive at once. A claim whose settlement failed is removed; a settled
    one keeps the transaction and the account it credited. A claim whose outcome is
    unknown stays `pending`, and one the facilitator settled otherwise than its
    authorization says (another payer, network or amount) is kept as `mismatch`: both
    wait for the operator (`agent-broker admin x402-pending`), `note` saying why."""

    __tablename__ = "x402_payments"
    __table_args__ = (
        UniqueConstraint("nonce", name="uq_x402_payments_nonce"),
        CheckConstraint("status IN ('pending', 'settled', 'mismatch')", name="status"),
        CheckConstraint("amount_micro > 0", name="positive"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(66))
    payer: Mapped[str] = mapped_column(String(42), index=True)
    network: Mapped[str] = mapped_column(String(30))
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    x402_version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10))
    account_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id"), nullable=True)
    transaction: Mapped[str | None] = mapped_column(String(100), nullable=True)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime())
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    note: Mapped[str | None] = mapped_column(String(300), nullable=True)
