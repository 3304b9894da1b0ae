"""API keys and handles. A key is shown once; only its keyed hash is stored. The handle
is a keyed one-way digest of the account id, fixed at creation."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.orm import Session

from agent_broker.accounts import repository
from agent_broker.accounts.models import AccountRecord
from agent_broker.config import Settings

KEY_PREFIX = "ab_live_"


def account_by_id(session: Session, account_id: str) -> AccountRecord | None:
    return repository.account_by_id(session, account_id)


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
    account = repository.account_by_key_hash(session, wanted)
    # The index finds the row; the comparison itself is constant-time.
    if account is None or not hmac.compare_digest(account.api_key_hash, wanted):
        return None
    return account
