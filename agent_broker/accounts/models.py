from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy import CheckConstraint, ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (CheckConstraint("status IN ('active', 'inactive')", name="status"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    handle: Mapped[str] = mapped_column(String(12), unique=True)
    # HMAC-SHA256 of the API key under BROKER_KEY_HASH_SECRET; the key itself is never kept.
    api_key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    key_preview: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(10), default="active")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    contact_name: Mapped[str | None] = mapped_column(String(200))
    contact_email: Mapped[str | None] = mapped_column(String(254))
    contact_url: Mapped[str | None] = mapped_column(String(2048))
    deal_route: Mapped[str | None] = mapped_column(String(2048))
    route_protocol_binding: Mapped[str | None] = mapped_column(String(300))
    agent_card_url: Mapped[str | None] = mapped_column(String(2048))


class IdentityLink(Base):
    """An identity (issuer, subject) that reaches an account: a dashboard session's, an
    agent OAuth token's or an x402 wallet's (accounts/identities.py tells them apart). One
    identity reaches one account; an account may be reached by several identities."""

    __tablename__ = "identity_links"
    __table_args__ = (UniqueConstraint("issuer", "subject", name="uq_identity_links_identity"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(500))
    subject: Mapped[str] = mapped_column(String(255))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    linked_at: Mapped[datetime] = mapped_column(UTCDateTime())


class SpentToken(Base):
    """An agent OAuth token (issuer, jti) already used for an operation it may do once
    (finalize): a second use is 409 oauth_token_replay."""

    __tablename__ = "spent_tokens"
    __table_args__ = (UniqueConstraint("issuer", "jti", name="uq_spent_tokens_token"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(500))
    jti: Mapped[str] = mapped_column(String(200))
    spent_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # The token's own expiry: after it (and the verifier's leeway) the row can go.
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class WalletChallenge(Base):
    """A Sign-In with Ethereum message issued for wallet key recovery (payments/x402/wallet.py),
    good for one recovery until it expires. Only its digest is kept: a recovery must
    present the very text that was issued."""

    __tablename__ = "wallet_challenges"

    nonce: Mapped[str] = mapped_column(String(32), primary_key=True)
    message_sha256: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class AccountRecord(Protocol):
    """An account as read: the entity above or its row (what authentication loads)."""

    @property
    def id(self) -> str: ...
    @property
    def handle(self) -> str: ...
    @property
    def api_key_hash(self) -> str: ...
    @property
    def key_preview(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def contact_name(self) -> str | None: ...
    @property
    def contact_email(self) -> str | None: ...
    @property
    def contact_url(self) -> str | None: ...
    @property
    def deal_route(self) -> str | None: ...
    @property
    def route_protocol_binding(self) -> str | None: ...
    @property
    def agent_card_url(self) -> str | None: ...
