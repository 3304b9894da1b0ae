"""Domain proof (docs/interface.md §8): which registrable domains an account has
proved it controls, the challenge it must serve, and the one-time welcome credit.

A grant is owed once per account and once per domain, ever: the grant row is unique on
each, written when a proof succeeds, and paid at most once (pending -> paid under the
row's lock). The deployment-wide daily cap is a counter row per UTC day, raised with
UPDATE ... WHERE paid < cap; a grant it holds back stays pending, keeping its place, and
the account's next verify on a later day collects it."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import AccountRecord
from agent_broker.config import Settings
from agent_broker.domains import repository
from agent_broker.domains.models import DomainClaim
from agent_broker.domains.registrable import NoRegistrableDomain, registrable_domain
from agent_broker.ledger import books
from agent_broker.ledger.service import credit
from agent_broker.pricing import usd
from agent_broker.problems import InvalidInput, MissingDealRouteSelf

CHALLENGE_PATH = "/.well-known/svc-challenge.txt"
TOKEN_PREFIX = "abchal_"


def has_verified_domain(session: Session, account_id: str) -> bool:
    return repository.has_claim(session, account_id)


def verified_accounts(session: Session, account_ids: set[str]) -> set[str]:
    """Which of these accounts proved a domain (one query)."""
    if not account_ids:
        return set()
    if len(account_ids) == 1:
        (only,) = account_ids
        return {only} if has_verified_domain(session, only) else set()
    rows = session.scalars(
        select(DomainClaim.account_id).where(DomainClaim.account_id.in_(account_ids)).distinct()
    )
    return set(rows)


@dataclass(frozen=True)
class Challenge:
    account_id: str
    domain: str
    url: str
    token: str

    def answered_by(self, body: bytes) -> bool:
        """The body is the token exactly, or the token and one line ending (what `echo`
        writes); nothing else (no spaces, no BOM, no second line)."""
        for ending in (b"", b"\n", b"\r\n"):
            if body.endswith(ending) and hmac.compare_digest(
                body[: len(body) - len(ending)], self.token.encode()
            ):
                return True
        return False


def token_for(settings: Settings, account_id: str, domain: str) -> str:
    """A keyed digest of (account, domain): stable across calls, and nobody without the
    deployment's secret can compute it from the account id."""
    digest = hmac.new(
        settings.key_hash_secret.encode(),
        b"domain-challenge\x00" + account_id.encode() + b"\x00" + domain.encode(),
        hashlib.sha256,
    ).hexdigest()
    return TOKEN_PREFIX + digest[:16]


def challenge_for(settings: Settings, account: AccountRecord) -> Challenge:
    """The challenge for the registrable domain of the account's current deal route."""
    if not account.deal_route:
        raise MissingDealRouteSelf(
            "Set a deal route first (PUT /v1/account/route): the domain to prove is the "
            "registrable domain of its host."
        )
    try:
        domain = registrable_domain(account.deal_route)
    except NoRegistrableDomain as exc:
        raise InvalidInput(
            f"Domain proof needs a registrable domain, but {exc}. Declare a deal route on a "
            "domain you control with PUT /v1/account/route."
        ) from None
    return Challenge(
        account_id=account.id,
        domain=domain,
        url=f"https://{domain}{CHALLENGE_PATH}",
        token=token_for(settings, account.id, domain),
    )


def challenge_view(session: Session, settings: Settings, account: AccountRecord) -> dict[str, Any]:
    challenge = challenge_for(settings, account)
    grant = repository.grant_of(session, account.id)
    return {
        "domain": challenge.domain,
        "url": challenge.url,
        "token": challenge.token,
        "verified": has_verified_domain(session, account.id),
        "grant_pending": grant is not None and grant.status == "pending",
        "grant_micro": settings.domain_grant_micro,
        "instructions": (
            f"Serve the token as the entire body of {challenge.url} (HTTPS, status 200, no "
            "redirect; one trailing newline is tolerated), then call POST "
            "/v1/account/domain/verify. The domain is the registrable domain of your "
            "deal_route; proving it marks your account domain_verified"
            + (
                f" and pays a one-time welcome credit of {settings.domain_grant_micro} µUSD "
                "(one per account and one per domain, ever)."
                if settings.domain_grant_micro
                else "; this deployment currently pays no welcome credit."
            )
        ),
    }


def has_claim_on(session: Session, account_id: str, domain: str) -> bool:
    return repository.has_claim_on(session, account_id, domain)


def record_proof(
    session: Session, settings: Settings, account_id: str, domain: str, *, now: datetime
) -> dict[str, Any]:
    """The write half of a successful verify: keep the claim, owe the grant if neither
    the account nor the domain ever had one, and pay what the account is owed unless
    the day's cap is reached. Returns the DomainVerification body."""
    repository.insert_claim(
        session, claim_id=str(uuid.uuid4()), account_id=account_id, domain=domain, verified_at=now
    )
    amount = settings.domain_grant_micro
    if amount > 0:
        repository.insert_pending_grant(
            session,
            grant_id=str(uuid.uuid4()),
            account_id=account_id,
            domain=domain,
            claimed_at=now,
        )
    grant = repository.grant_of(session, account_id)
    outcome: dict[str, Any] = {"domain": domain, "verified": True, "granted": False}
    if grant is None:
        return outcome | {"granted_micro": 0, "detail": _no_grant_detail(domain, amount)}
    if grant.status == "paid":
        return outcome | {
            "granted_micro": 0,
            "detail": "Domain verified. This account already received its welcome credit.",
        }
    if amount == 0:
        return outcome | {
            "granted_micro": 0,
            "detail": "Domain verified. This deployment currently pays no welcome credit.",
        }
    return outcome | _pay(session, settings, account_id, amount, now=now)


def _pay(
    session: Session, settings: Settings, account_id: str, amount: int, *, now: datetime
) -> dict[str, Any]:
    paying = repository.start_paying(session, account_id, amount=amount, now=now)
    if paying is None:  # a concurrent verify of this account paid it first
        return {
            "granted_micro": 0,
            "detail": "Domain verified. This account already received its welcome credit.",
        }
    day = now.date().isoformat()
    repository.open_day(session, day)
    if not repository.count_paid_under_cap(session, day, settings.domain_grant_daily_cap):
        repository.keep_pending(session, paying.id)
        return {
            "granted_micro": 0,
            "grant_reason": "grant_cap_reached",
            "detail": (
                "Domain verified. Today's welcome credits are all paid out; yours is kept "
                "for you: call verify again after 00:00 UTC to collect it."
            ),
        }
    credit(
        session,
        account_id,
        amount,
        source=books.GRANTS,
        kind="domain_grant",
        memo=f"welcome credit for proving {paying.domain}",
        now=now,
        reference=paying.id,
    )
    return {
        "granted": True,
        "granted_micro": amount,
        "detail": f"Domain verified and ${usd(amount)} credited to your balance.",
    }


def _no_grant_detail(domain: str, amount: int) -> str:
    if amount == 0:
        return "Domain verified. This deployment currently pays no welcome credit."
    return (
        f"Domain verified. {domain} already claimed a welcome credit for another account; "
        "a domain earns one only once."
    )
