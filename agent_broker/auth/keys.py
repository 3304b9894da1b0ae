"""The API key rule, written once: an unknown key is 401, a disabled account's key 403
api_key_disabled. REST, MCP and identity linking all resolve keys through it."""

from __future__ import annotations

from sqlalchemy.orm import Session

from agent_broker.accounts import credentials
from agent_broker.accounts.caller import Caller
from agent_broker.accounts.models import AccountRecord
from agent_broker.config import Settings
from agent_broker.http.policy import CredentialKind
from agent_broker.problems import ApiKeyDisabled, Unauthorized


def active_account(session: Session, settings: Settings, presented: str) -> AccountRecord:
    """The active account this key belongs to."""
    account = credentials.account_for_key(session, settings, presented)
    if account is None:
        raise Unauthorized("The API key is not recognised.")
    if account.status != "active":
        raise ApiKeyDisabled()
    return account


def key_caller(session: Session, settings: Settings, presented: str) -> Caller:
    return Caller(account=active_account(session, settings, presented), via=CredentialKind.api_key)
