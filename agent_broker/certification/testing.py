"""POST /v1/account/certification/test, one free probe, holding nothing over the network:
check the route in a short read, probe with no transaction open, record in a write."""

from __future__ import annotations

from typing import Any

from agent_broker import clock
from agent_broker.accounts.models import AccountRecord
from agent_broker.certification import service
from agent_broker.certification.probe import probe
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.http.outbound import OutboundClient
from agent_broker.http.rate_limits import RateLimiter

RATE_LIMIT_NAME = "certification-test"


async def free_test(
    db: Database,
    settings: Settings,
    outbound: OutboundClient,
    limiter: RateLimiter,
    account: AccountRecord,
) -> dict[str, Any]:
    """`account` is the caller's row as authentication just read it."""
    async with transaction(db, write=False) as session:
        route = await run(session, service.testable_route, session, account)
    limiter.hit(RATE_LIMIT_NAME, settings.certification_test_rate_limit, account.id)
    result = await probe(outbound, route)
    async with transaction(db, write=True) as session:
        now = clock.now()
        await run(session, service.record_test, session, account.id, route, result, now=now)
        return await run(session, service.status_view, session, account, now=now)
