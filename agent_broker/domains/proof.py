"""POST /v1/account/domain/verify without holding the database over the network: read the
challenge in one short transaction, fetch the file through the guarded outbound client
with no transaction open, then record the proof and pay the grant in a write
transaction of its own. The proof recorded is for the domain that was fetched, so a
deal_route changed meanwhile cannot borrow it."""

from __future__ import annotations

from typing import Any

from agent_broker import clock
from agent_broker.accounts.models import AccountRecord
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.domains import service
from agent_broker.domains.service import Challenge
from agent_broker.http.outbound import OutboundClient, OutboundRefused
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.problems import InvalidInput

MAX_CHALLENGE_BYTES = 4096
RATE_LIMIT_NAME = "domain-verify"


class ChallengeFailed(InvalidInput):
    """The proof failed; `check` (also in the problem body) names the way it failed."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"Domain not verified: {detail}", extra={"check": check})


async def verify(
    db: Database,
    settings: Settings,
    outbound: OutboundClient,
    limiter: RateLimiter,
    account: AccountRecord,
) -> dict[str, Any]:
    """`account` is the caller's row as authentication just read it."""
    # Every attempt counts, failed ones included: each may fetch from a host the caller chose.
    limiter.hit(RATE_LIMIT_NAME, settings.domain_verify_rate_limit, account.id)
    challenge = service.challenge_for(settings, account)
    async with transaction(db, write=False) as session:
        proved = await run(session, service.has_claim_on, session, account.id, challenge.domain)
    if not proved:
        await _fetch_and_check(outbound, challenge)
    async with transaction(db, write=True) as session:
        return await run(
            session,
            service.record_proof,
            session,
            settings,
            account.id,
            challenge.domain,
            now=clock.now(),
        )


async def _fetch_and_check(outbound: OutboundClient, challenge: Challenge) -> None:
    try:
        response = await outbound.get(challenge.url, max_bytes=MAX_CHALLENGE_BYTES)
    except OutboundRefused as refused:
        raise ChallengeFailed(
            refused.kind, f"{challenge.url} could not be fetched: {refused}."
        ) from None
    if 300 <= response.status_code < 400:
        raise ChallengeFailed(
            "redirect",
            f"{challenge.url} answered {response.status_code} (a redirect); the file must be "
            "served at that exact URL, and redirects are not followed.",
        )
    if response.status_code != 200:
        raise ChallengeFailed(
            "status", f"{challenge.url} answered {response.status_code}, not 200."
        )
    if not challenge.answered_by(response.body):
        raise ChallengeFailed(
            "mismatch",
            f"the body of {challenge.url} is not the token (it must be exactly the token, "
            "optionally followed by one newline).",
        )
