from __future__ import annotations

from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from agent_broker.db.base import Base, UTCDateTime


class SigningKey(Base):
    """A signing key's public half, published while tokens it signed can still be alive.
    The private half never reaches the database."""

    __tablename__ = "signing_keys"

    kid: Mapped[str] = mapped_column(String(16), primary_key=True)
    public_key_hex: Mapped[str] = mapped_column(String(64))
    # When it last became the current key; a key that comes back (rollback) is re-activated.
    activated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Null while current; published for one token life after this moment.
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
