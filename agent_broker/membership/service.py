"""Registration, the account view and the deal route: account rules that reach into the
ledger, reputation, domains and certification (agent_broker.accounts keeps the rest)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import credentials
from agent_broker.accounts.models import Account, AccountRecord
from agent_broker.accounts.profile import SetupRequirements, setup_requirements
from agent_broker.accounts.service import protocol_bindings
from agent_broker.certification import service as certification
from agent_broker.config import Settings
from agent_broker.domains import service as domains
from agent_broker.escrow import service as escrow
from agent_broker.http import urls
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import service as ledger_service
from agent_broker.problems import InvalidInput, TermsRequired
from agent_broker.reputation import service as reputation


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
    accepted_terms: object,
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
    accepted_terms: object,
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


def account_view(session: Session, account: AccountRecord, *, now: datetime) -> dict:
    account_id = account.id
    wallet = ledger_service.wallet(session, account_id, now=now)
    facets = reputation.facets(session, account_id)
    return {
        "account_id": account.id,
        "handle": account.handle,
        "balance_micro": wallet.spendable_micro,
        # Held for the account: its open holds, and the prices of its open escrow deals as
        # buyer (in the escrow book until they settle, docs/interface.md §11.4).
        "held_micro": wallet.held_micro + escrow.held_as_buyer(session, account_id),
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
    route = urls.https_url(deal_route, "deal_route", allow_query=False)
    if binding is not None and binding not in protocol_bindings(settings):
        raise InvalidInput(
            "route_protocol_binding must be one of: " + ", ".join(protocol_bindings(settings)) + "."
        )
    card = (
        urls.public_https_url(agent_card_url, "agent_card_url", document=True)
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
