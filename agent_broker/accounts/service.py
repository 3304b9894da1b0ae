"""Account rules: registration, the account and profile views, contact and route."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import credentials, validation
from agent_broker.accounts.models import Account
from agent_broker.accounts.profile import SetupRequirements, setup_requirements
from agent_broker.config import Settings
from agent_broker.domains import service as domains
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.ledger import service as ledger_service
from agent_broker.problems import InvalidInput, NotFound, TermsRequired
from agent_broker.reputation import service as reputation

CREDIT_MICRO = 500  # 1 credit = 500 µUSD
A2A_BINDINGS = ("JSONRPC", "HTTP+JSON")

__all__ = ["register", "account_view", "profile_view", "set_contact", "set_route", "get"]


@dataclass(frozen=True)
class Registration:
    account_id: str
    api_key: str
    setup: SetupRequirements


def register(
    session: Session,
    settings: Settings,
    limiter: RateLimiter,
    *,
    accepted_terms: bool | None,
    source: str,
    now: datetime,
) -> Registration:
    if accepted_terms is not True:
        raise TermsRequired()
    limiter.hit("register", settings.register_rate_limit, source)
    account_id = str(uuid.uuid4())
    api_key = credentials.new_api_key()
    account = Account(
        id=account_id,
        handle=credentials.handle_for(settings, account_id),
        api_key_hash=credentials.hash_api_key(settings, api_key),
        key_preview=credentials.key_preview(api_key),
        status="active",
        created_at=now,
    )
    session.add(account)
    session.flush()
    ledger_service.open_wallet(session, account_id, now=now)
    reputation.seed_facets(session, account_id)
    return Registration(account_id=account_id, api_key=api_key, setup=setup_requirements(account))


def get(session: Session, account_id: str) -> Account:
    account = session.get(Account, account_id)
    if account is None:
        raise NotFound("No such account.")
    return account


def account_view(session: Session, account: Account, *, now: datetime) -> dict:
    account_id = account.id
    wallet = ledger_service.wallet(session, account_id, now=now)
    facets = reputation.facets(session, account_id)
    return {
        "account_id": account.id,
        "handle": account.handle,
        "balance_micro": wallet.spendable_micro,
        "held_micro": wallet.held_micro,
        "status": account.status,
        "key_preview": account.key_preview,
        "created_at": clock.rfc3339(account.created_at),
        "reputation": {
            "buyer": facets["buyer"],
            "seller": facets["seller"],
            "funded": wallet.funded,
            "domain_verified": domains.has_verified_domain(session, account_id),
        },
    }


def profile_view(session: Session, account: Account, *, now: datetime) -> dict:
    wallet = ledger_service.wallet(session, account.id, now=now)
    has_contact = any((account.contact_name, account.contact_email, account.contact_url))
    return {
        "account_id": account.id,
        "status": account.status,
        "balance_credits": wallet.spendable_micro // CREDIT_MICRO,
        "key_preview": account.key_preview,
        "contact": {
            "contact_name": account.contact_name,
            "contact_email": account.contact_email,
            "contact_url": account.contact_url,
        }
        if has_contact
        else None,
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
    account.contact_url = validation.https_url(url, "contact_url") if url and url.strip() else None
    session.flush()


def protocol_bindings(settings: Settings) -> tuple[str, ...]:
    return (*A2A_BINDINGS, f"{settings.effective_bindings_base}/webhook-v1")


def set_route(
    session: Session,
    settings: Settings,
    account: Account,
    *,
    deal_route: str,
    binding: str | None,
    agent_card_url: str | None,
) -> None:
    """A write replaces the whole declaration: an omitted optional field is cleared."""
    route = validation.https_url(deal_route, "deal_route", allow_query=False)
    if binding is not None and binding not in protocol_bindings(settings):
        raise InvalidInput(
            "route_protocol_binding must be one of: " + ", ".join(protocol_bindings(settings)) + "."
        )
    card = validation.https_url(agent_card_url, "agent_card_url") if agent_card_url else None
    account.deal_route = route
    account.route_protocol_binding = binding
    account.agent_card_url = card
    session.flush()
