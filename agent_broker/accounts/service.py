"""Account rules: the account's row, its profile view, contact, key rotation and disabling.
Registration, the account view and the deal route, which reach into reputation, domains
and certification, are in agent_broker.membership."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker import pricing
from agent_broker.accounts import credentials, identities, validation
from agent_broker.accounts.models import Account, AccountRecord
from agent_broker.accounts.profile import setup_requirements
from agent_broker.config import Settings
from agent_broker.http import urls
from agent_broker.ledger import service as ledger_service
from agent_broker.problems import NotFound

A2A_BINDINGS = ("JSONRPC", "HTTP+JSON")


def record(session: Session, account_id: str) -> AccountRecord:
    """The account's row, to read (get() loads the entity, to change it)."""
    found = credentials.account_by_id(session, account_id)
    if found is None:
        raise NotFound("No such account.")
    return found


def get(session: Session, account_id: str) -> Account:
    account = session.get(Account, account_id)
    if account is None:
        raise NotFound("No such account.")
    return account


def profile_view(session: Session, account: AccountRecord, *, now: datetime) -> dict:
    wallet = ledger_service.wallet(session, account.id, now=now)
    # The contact object is null until a contact is set; inside it, an unset field is
    # omitted rather than null.
    contact = {
        name: value
        for name, value in (
            ("contact_name", account.contact_name),
            ("contact_email", account.contact_email),
            ("contact_url", account.contact_url),
        )
        if value
    }
    return {
        "account_id": account.id,
        "status": account.status,
        "balance_credits": pricing.whole_credits(wallet.spendable_micro),
        "key_preview": account.key_preview,
        "contact": contact or None,
        "deal_route": account.deal_route,
        "route_protocol_binding": account.route_protocol_binding,
        "agent_card_url": account.agent_card_url,
        **setup_requirements(account).as_dict(),
    }


def set_contact(
    session: Session, account: Account, *, name: str, email: str, url: str | None
) -> None:
    account.contact_name = validation.contact_name(name)
    account.contact_email = validation.contact_email(email)
    account.contact_url = urls.https_url(url, "contact_url") if url and url.strip() else None
    session.flush()


def protocol_bindings(settings: Settings) -> tuple[str, ...]:
    return (*A2A_BINDINGS, f"{settings.effective_bindings_base}/webhook-v1")


def disable_key(session: Session, account_id: str) -> None:
    """The account becomes inactive: its key then gets 403 api_key_disabled everywhere."""
    get(session, account_id).status = "inactive"
    session.flush()


def rotate_key(
    session: Session,
    settings: Settings,
    account_id: str,
    *,
    keep_identity: tuple[str, str] | None = None,
) -> dict:
    """A new key, shown once; the old one fails 401 at once (its hash is replaced), and a
    disabled account is active again. Balance, listings, deals and reputation are kept.

    The session and OAuth links go with the old key, but `keep_identity` (the session a
    rotation is made with): one made with a leaked key stays no way in. Wallet links stay
    (accounts/identities.py)."""
    account = get(session, account_id)
    api_key = credentials.new_api_key()
    account.api_key_hash = credentials.hash_api_key(settings, api_key)
    account.key_preview = credentials.key_preview(api_key)
    account.status = "active"
    session.flush()
    identities.revoke_bearer_links(session, account_id, keep=keep_identity)
    return {"api_key": api_key, "key_preview": account.key_preview}
