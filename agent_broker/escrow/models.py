from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, CheckConstraint, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime

# held → delivered → released (accepted) or rejected; rejected → released, refunded or
# split (ruled); held past deliver_by → refunded; delivered past accept_by → released.
OPEN = ("held", "delivered", "rejected")
SETTLED = ("released", "refunded", "split")


class DealEscrow(Base):
    """The price of an escrow deal, held by the broker from the seal until it settles.

    The money itself sits in the ledger's escrow book (journalled with the deal as
    reference); this row is the escrow's state, deadlines and outcome."""

    __tablename__ = "deal_escrows"
    __table_args__ = (
        CheckConstraint(
            "status IN ('held', 'delivered', 'rejected', 'released', 'refunded', 'split')",
            name="status",
        ),
        CheckConstraint("amount_micro >= 0", name="amount_non_negative"),
        # The deadline job walks open escrows by their next deadline.
        Index("ix_deal_escrows_open", "status", "deliver_by"),
    )

    deal_id: Mapped[str] = mapped_column(ForeignKey("deals.id"), primary_key=True)
    buyer_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    seller_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    # None: the operator evaluates (agent-broker admin escrow-rule).
    evaluator_id: Mapped[str | None] = mapped_column(ForeignKey("accounts.id"), index=True)
    evaluator_handle: Mapped[str | None] = mapped_column(String(12))
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    # Whether the deal moves reputation (the funded rule of its seal).
    counts_for_reputation: Mapped[bool] = mapped_column(Boolean)
    fee_bps: Mapped[int] = mapped_column(Integer)
    acceptance_hours: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    deliver_by: Mapped[datetime] = mapped_column(UTCDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    accept_by: Mapped[datetime | None] = mapped_column(UTCDateTime())
    delivery_note: Mapped[str | None] = mapped_column(String(2000))
    evidence_sha256: Mapped[str | None] = mapped_column(String(64))
    rejected_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    rejection_reason: Mapped[str | None] = mapped_column(String(2000))
    ruling_outcome: Mapped[str | None] = mapped_column(String(8))
    ruling_seller_share_bps: Mapped[int | None] = mapped_column(Integer)
    ruling_reason: Mapped[str | None] = mapped_column(String(2000))
    ruling_token: Mapped[str | None] = mapped_column(String(2000))
    ruled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # What the settlement paid: to the seller (after the fee), back to the buyer, as fee.
    released_micro: Mapped[int | None] = mapped_column(BigInteger)
    refunded_micro: Mapped[int | None] = mapped_column(BigInteger)
    fee_micro: Mapped[int | None] = mapped_column(BigInteger)
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # How it settled: accepted, ruled, deadline (either deadline), operator.
    settled_by: Mapped[str | None] = mapped_column(String(10))
