from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, CheckConstraint, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class LedgerAccount(Base):
    """A book in the journal. Wallets (one per account) keep a running balance that the
    database refuses to take below zero; system books (fees, operator, processors) are
    sources and sinks whose balance is the sum of their postings."""

    __tablename__ = "ledger_accounts"
    __table_args__ = (
        CheckConstraint(
            "kind != 'wallet' OR (total_micro >= 0 AND held_micro >= 0"
            " AND held_micro <= total_micro)",
            name="wallet_non_negative",
        ),
        CheckConstraint("kind IN ('wallet', 'system')", name="kind"),
    )

    code: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    owner_id: Mapped[str | None] = mapped_column(String(36), unique=True)
    # Everything credited and not spent, holds included; spendable = total - held.
    total_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    held_micro: Mapped[int] = mapped_column(BigInteger, default=0)
    # True once real money was ever put in; never cleared.
    funded: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class JournalEntry(Base):
    __tablename__ = "ledger_entries"

    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(36), unique=True)
    kind: Mapped[str] = mapped_column(String(40))
    memo: Mapped[str] = mapped_column(String(500))
    reference: Mapped[str | None] = mapped_column(String(100))
    real_money: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Posting(Base):
    __tablename__ = "ledger_postings"
    __table_args__ = (Index("ix_ledger_postings_account_code", "account_code"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    entry_sequence: Mapped[int] = mapped_column(ForeignKey("ledger_entries.sequence"), index=True)
    account_code: Mapped[str] = mapped_column(ForeignKey("ledger_accounts.code"))
    amount_micro: Mapped[int] = mapped_column(BigInteger)


class Hold(Base):
    """Money set aside from a wallet's spendable balance. Taking and releasing a hold moves
    no money (not journalled); capturing one is a journal entry."""

    __tablename__ = "ledger_holds"
    __table_args__ = (
        CheckConstraint("amount_micro > 0", name="amount_positive"),
        CheckConstraint("status IN ('active', 'released', 'captured', 'lapsed')", name="status"),
        Index("ix_ledger_holds_wallet_active", "wallet_code", "status", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    wallet_code: Mapped[str] = mapped_column(ForeignKey("ledger_accounts.code"))
    amount_micro: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(10), default="active")
    reference: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    settled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
