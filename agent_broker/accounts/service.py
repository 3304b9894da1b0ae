"""Account rules: registration, the account and profile views, contact and route."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import credentials, identities, validation
from agent_broker.accounts.models import Account, AccountRecord
from agent_broker.accounts.profile import SetupRequirements, setup_requirements
from agent_broker.certification import service as certification
from agent_broker.config import Settings
from agent_broker.domains import service as domains
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import pricing
from agent_broker.ledger import service as ledger_service
from agent_broker.problems import InvalidInput, NotFound, TermsRequired
from agent_broker.reputation import service as reputation

A2A_BINDINGS = ("JSONRPC", "HTTP+JSON")

__all__ = [
    "register",
    "register_once",
    "open_account",
    "account_view",
    "profile_view",
    "set_contact",
    "set_route",
    "get",
]


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
    return open_account(session, settings, now=now)


def open_account(session: Session, settings: Settings, *, now: datetime) -> Registration:
    """A new account with its key, wallet and reputation facets: registration's work, and
    a first x402 payment's from a wallet never seen before."""
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


def register_once(
    session: Session,
    settings: Settings,
    limiter: RateLimiter,
    key: IdempotencyKey | None,
    *,
    accepted_terms: bool | None,
    source: str,
    now: datetime,
) -> Outcome:
    """Registration with its optional Idempotency-Key: 201 with the key once; a replay is
    200 with the account id only (the key is never kept). Keys are scoped to the source
    address, so someone else's key sent from elsewhere creates a new account instead of
    revealing theirs."""

    def create() -> Outcome:
        made = register(
            session, settings, limiter, accepted_terms=accepted_terms, source=source, now=now
        )
        return Outcome(
            201,
            {
                "account_id": made.account_id,
                "api_key": made.api_key,
                "existing": False,
                "account_setup_required": made.setup.as_dict(),
            },
        )

    return run_once(
        session,
        f"register:{source}",
        key,
        create,
        now=now,
        stored=lambda body: {"account_id": body["account_id"]},
        replayed=lambda kept: Outcome(
            200, {"account_id": kept.body["account_id"], "existing": True}, replayed=True
        ),
    )


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


def account_view(session: Session, account: AccountRecord, *, now: datetime) -> dict:
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
    card = (
        validation.public_https_url(agent_card_url, "agent_card_url", document=True)
        if agent_card_url
        else None
    )
    if route != account.deal_route:
        # A certification badge speaks for the route it checked: it goes with it, at once.
        certification.restart_window(session, account.id)
    account.deal_route = route
    account.route_protocol_binding = binding
    account.agent_card_url = card
    session.flush()


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
