"""The `certification-checks` job: renew what is due, then probe every subscribed deal
route and record the results as scheduled checks. The probes run concurrently (a bounded
number at a time, each with the probe's own 10 s deadline) after the job's transaction
is committed, so no lock is held while a route answers; the job's lease keeps it to one
replica at a time."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.certification import repository, service, subscription
from agent_broker.certification.probe import ProbeResult, probe
from agent_broker.config import Settings
from agent_broker.http.outbound import OutboundClient, OutboundPolicy
from agent_broker.problems import Problem

log = structlog.get_logger("agent_broker.certification")


@dataclass(frozen=True)
class Target:
    account_id: str
    route: str | None  # None: nothing to probe (no route, or not on a proved domain)
    refusal: str


def _targets(session: Session, now: datetime) -> list[Target]:
    targets = []
    for row in repository.subscribed_routes(session, now=now):
        account = service.account_row(session, row.account_id)
        try:
            targets.append(Target(row.account_id, service.testable_route(session, account), ""))
        except Problem as refused:
            targets.append(Target(row.account_id, row.deal_route, refused.detail))
    return targets


async def _probe_all(
    outbound: OutboundClient, targets: list[Target], concurrency: int
) -> list[ProbeResult]:
    gate = asyncio.Semaphore(concurrency)

    async def one(target: Target) -> ProbeResult:
        if target.refusal or target.route is None:
            return ProbeResult(False, None, f"not probed: {target.refusal}"[:300])
        async with gate:
            try:
                return await probe(outbound, target.route)
            except Exception as error:  # noqa: BLE001 - one route's fault is its own failed check
                # Whatever a route answered, the other accounts' checks are still recorded.
                log.error("certification_probe_failed", error_type=type(error).__name__)
                return ProbeResult(False, None, f"probe error: {type(error).__name__}")

    return list(await asyncio.gather(*(one(target) for target in targets)))


def run_checks(session: Session, settings: Settings, now: datetime) -> str:
    renewed, lapsed = subscription.renew_due(session, now=now)
    targets = _targets(session, now)
    session.commit()  # nothing is held while the routes answer
    outbound = OutboundClient(OutboundPolicy.from_settings(settings))
    results = asyncio.run(_probe_all(outbound, targets, settings.certification_check_concurrency))
    checked_at = clock.now()
    for target, result in zip(targets, results, strict=True):
        if target.route is not None and not target.refusal:
            service.follow_route(session, target.account_id, target.route, now=checked_at)
        service.record_check(
            session, target.account_id, "scheduled", target.route or "", result, now=checked_at
        )
    passed = sum(result.passed for result in results)
    return f"renewed {renewed}, lapsed {lapsed}; checked {len(results)} routes, {passed} passed"
