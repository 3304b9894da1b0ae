from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
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


class ChainSeal(Base):
    """One sealed journal entry: its link in the hash chain. Append-only (database
    triggers). No foreign key to the entry: a seal is evidence and must outlive what it
    vouches for, so a deleted row shows up as a seal without its row."""

    __tablename__ = "ledger_seals"
    __table_args__ = (
        CheckConstraint("prev_sequence >= 0 AND prev_sequence < sequence", name="link_backwards"),
    )

    # The sealed entry's journal sequence.
    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    # The previously sealed entry (0 before the first). Unique: the chain cannot fork, so
    # two overlapping sealers cannot both extend the same head.
    prev_sequence: Mapped[int] = mapped_column(Integer, unique=True)
    # SHA-256 (hex) over the previous link's hash and the canonical entry with postings.
    hash: Mapped[str] = mapped_column(String(64))


class ChainCheckpoint(Base):
    """The chain's head as a sealer run left it. Append-only (database triggers)."""

    __tablename__ = "ledger_checkpoints"

    # The last sealed entry's sequence; the sealed range ends just after it.
    sequence: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    hash: Mapped[str] = mapped_column(String(64))
    sealed_at: Mapped[datetime] = mapped_column(UTCDateTime())


class StoredVerdict(Base):
    """The one verdict GET /v1/ledger/verify serves, replaced by every sealer run. Kept as
    a JSON document so a damaged row is detected when served, not when loaded."""

    __tablename__ = "ledger_verdicts"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    document: Mapped[str] = mapped_column(Text)
