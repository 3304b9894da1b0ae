"""The published keys: which public keys verifiers may use, and which one is current.

A key stays published for one token life (7 days) after it is retired, so every token it
signed can still be verified until that token expires."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from agent_broker.tokens.keys import Signer
from agent_broker.tokens.models import SigningKey
from agent_broker.tokens.service import DEAL_CREDENTIAL_TTL

# The longest life of any token we sign (deal credentials); reputation statements are 24 h.
TOKEN_TTL = DEAL_CREDENTIAL_TTL


def register_current(session: Session, signer: Signer, *, now: datetime) -> None:
    """Make `signer`'s key the current one: insert it if missing (re-activate it if it had
    been retired, e.g. a rollback) and retire every other current key at `now`. Idempotent,
    so every worker can run it at start-up; the last key started wins."""
    if session.bind.dialect.name == "postgresql":
        # Serialise registrations, so two workers starting with different keys cannot each
        # miss the other's uncommitted row and leave two current keys.
        session.execute(text("LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE"))
    insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
    session.execute(
        insert(SigningKey)
        .values(kid=signer.kid, public_key_hex=signer.public_key_hex, activated_at=now)
        .on_conflict_do_nothing(index_elements=["kid"])
    )
    stored = session.execute(
        select(SigningKey.public_key_hex).where(SigningKey.kid == signer.kid)
    ).scalar_one()
    if stored != signer.public_key_hex:
        raise RuntimeError(f"kid {signer.kid} is already published for a different key")
    session.execute(
        update(SigningKey)
        .where(SigningKey.kid == signer.kid, SigningKey.retired_at.is_not(None))
        .values(retired_at=None, activated_at=now)
    )
    session.execute(
        update(SigningKey)
        .where(SigningKey.kid != signer.kid, SigningKey.retired_at.is_(None))
        .values(retired_at=now)
    )
    session.flush()


def published(session: Session, *, now: datetime) -> list[dict]:
    """Key document entries: the current key(s) first, then keys retired less than one
    token life ago, most recently retired first."""
    rows = session.scalars(
        select(SigningKey)
        .where(or_(SigningKey.retired_at.is_(None), SigningKey.retired_at > now - TOKEN_TTL))
        .order_by(SigningKey.retired_at.is_not(None), SigningKey.retired_at.desc())
    ).all()
    return [
        {
            "kid": row.kid,
            "purpose": "public",
            "version": "v4",
            "public_key_hex": row.public_key_hex,
            "current": row.retired_at is None,
        }
        for row in rows
    ]


def all_keys(session: Session) -> list[SigningKey]:
    return list(
        session.scalars(
            select(SigningKey).order_by(SigningKey.activated_at.desc(), SigningKey.kid)
        ).all()
    )
