"""API keys and handles. A key is shown once; only its keyed hash is stored. The handle
is a keyed one-way digest of the account id, fixed at creation."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account, AccountRecord
from agent_broker.config import Settings
from agent_broker.db.prepared import Prepared

KEY_PREFIX = "ab_live_"
# Every authenticated request runs it: a prepared statement returning the row, not an
# entity (routes that change the account load the entity themselves).
_BY_KEY_HASH = Prepared(
    select(Account.__table__).where(Account.__table__.c.api_key_hash == bindparam("key_hash"))
)


_BY_ID = Prepared(
    select(Account.__table__).where(Account.__table__.c.id == bindparam("account_id"))
)


def account_by_id(session: Session, account_id: str) -> AccountRecord | None:
    return _BY_ID.one_or_none(session, account_id=account_id)


def new_api_key() -> str:
    return KEY_PREFIX + secrets.token_hex(16)  # 128 bits of entropy


def _digest(secret: str, label: bytes, value: str) -> str:
    return hmac.new(secret.encode(), label + value.encode(), hashlib.sha256).hexdigest()


def hash_api_key(settings: Settings, key: str) -> str:
    return _digest(settings.key_hash_secret, b"api-key\x00", key)


def key_preview(key: str) -> str:
    return f"{key[:4]}...{key[-4:]}"


def handle_for(settings: Settings, account_id: str) -> str:
    return _digest(settings.key_hash_secret, b"handle\x00", account_id)[:12]


def account_for_key(session: Session, settings: Settings, presented: str) -> AccountRecord | None:
    if len(presented) > 200:
        return None
    wanted = hash_api_key(settings, presented)
    account = _BY_KEY_HASH.one_or_none(session, key_hash=wanted)
    # The index finds the row; the comparison itself is constant-time.
    if account is None or not hmac.compare_digest(account.api_key_hash, wanted):
        return None
    return account
