"""API keys and handles. A key is shown once; only its keyed hash is stored. The handle
is a keyed one-way digest of the account id, fixed at creation."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account
from agent_broker.config import Settings

KEY_PREFIX = "ab_live_"
# Built once: every authenticated request runs it, and building costs more than running.
_BY_KEY_HASH = select(Account).where(Account.api_key_hash == bindparam("key_hash"))


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


def account_for_key(session: Session, settings: Settings, presented: str) -> Account | None:
    if len(presented) > 200:
        return None
    wanted = hash_api_key(settings, presented)
    account = session.scalars(_BY_KEY_HASH, {"key_hash": wanted}).one_or_none()
    # The index finds the row; the comparison itself is constant-time.
    if account is None or not hmac.compare_digest(account.api_key_hash, wanted):
        return None
    return account
