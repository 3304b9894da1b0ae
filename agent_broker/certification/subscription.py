"""Subscribing, canceling and renewing: 30-day periods charged through the ledger.

Subscribe needs a deal route on a proved domain, an account funded with real money once,
and a passing free test of the current route within 24 hours; it charges one period,
unless a period is still paid (a canceled one resumes free). A short balance is 402 and,
the request's transaction rolling back, nothing is written; the Idempotency-Key makes a
retry answer the first result, never a second charge. Cancel only stops renewal; nothing
is refunded. Renewal charges the next period when one ends, or lets the subscription
lapse on a short balance. A period begun after an unpaid gap starts the badge's evidence
afresh."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.accounts.models import AccountRecord
from agent_broker.certification import repository, service
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import books
from agent_broker.ledger import service as ledger
from agent_broker.ledger.errors import InsufficientFunds
from agent_broker.pricing import CERTIFICATION_PERIOD_MICRO
from agent_broker.problems import Problem, Reason

PERIOD = timedelta(days=30)
TEST_FRESHNESS = timedelta(hours=24)
KIND = "certification_period"


class CertificationUnfunded(Problem):
    status, reason = 409, Reason.certification_unfunded
    default_detail = (
        "Certification is for accounts funded with real money at least once (a credit pack "
        "or a settled x402 payment); the welcome credit does not count."
    )


class CertificationTestRequired(Problem):
    status, reason = 409, Reason.certification_test_required
    default_detail = (
        "Run a free test of your current deal route first (POST "
        "/v1/account/certification/test); a passing test within 24 hours is needed."
    )


def _passed_recently(record: Any, route: str, now: datetime) -> bool:
    return bool(
        record.last_test_passed
        and record.last_test_route == route
        and record.last_test_at >= now - TEST_FRESHNESS
    )


def _charge_period(
    session: Session,
    account_id: str,
    start: datetime,
    *,
    previous_end: datetime | None,
    now: datetime,
) -> None:
    """Charge the period from `start`. One that does not follow on from the last (a first
    subscription, or one after an unpaid gap) restarts the evidence window: checks made
    before the gap do not count toward the new badge."""
    end = start + PERIOD
    ledger.charge(
        session,
        account_id,
        CERTIFICATION_PERIOD_MICRO,
        sink=books.FEES,
        kind=KIND,
        memo=f"certification {start:%Y-%m-%d} to {end:%Y-%m-%d}",
        now=now,
    )
    repository.start_period(session, account_id, start=start, end=end)
    if previous_end is None or previous_end < start:
        service.restart_window(session, account_id)


def subscribe(session: Session, account: AccountRecord, *, now: datetime) -> dict:
    route = service.testable_route(session, account)
    if not ledger.is_funded(session, account.id):
        raise CertificationUnfunded()
    record = service.record_of(session, account.id, lock=True)
    if record is None or not _passed_recently(record, route, now):
        raise CertificationTestRequired()
    if record.period_end is not None and record.period_end > now:
        repository.set_renew(session, account.id, renew=True)  # still paid: free
    else:
        _charge_period(session, account.id, now, previous_end=record.period_end, now=now)
    service.follow_route(session, account.id, route, now=now)
    return service.status_view(session, account, now=now)


def subscribe_once(
    session: Session, account: AccountRecord, key: IdempotencyKey, *, now: datetime
) -> Outcome:
    return run_once(
        session,
        account.id,
        key,
        lambda: Outcome(200, subscribe(session, account, now=now)),
        now=now,
    )


def cancel(session: Session, account: AccountRecord, *, now: datetime) -> dict:
    repository.set_renew(session, account.id, renew=False)
    return service.status_view(session, account, now=now)


def renew_due(session: Session, *, now: datetime) -> tuple[int, int]:
    """Charge the next period of every renewing subscription whose period has ended; a
    short balance ends renewal instead. Returns (renewed, lapsed)."""
    renewed = lapsed = 0
    for listed in repository.due_for_renewal(session, now=now):
        # Read again under the row's lock: a subscribe may have charged meanwhile.
        due = service.record_of(session, listed.account_id, lock=True)
        if not (due.renew and due.period_end <= now):
            continue
        if service.account_row(session, due.account_id).status != "active":
            # A disabled account is not charged: its subscription ends with its period.
            repository.set_renew(session, due.account_id, renew=False)
            lapsed += 1
            continue
        # Back to back with the period that ended, unless a whole period was missed.
        start = due.period_end if due.period_end > now - PERIOD else now
        try:
            _charge_period(session, due.account_id, start, previous_end=due.period_end, now=now)
            renewed += 1
        except InsufficientFunds:
            repository.set_renew(session, due.account_id, renew=False)
            lapsed += 1
    return renewed, lapsed
