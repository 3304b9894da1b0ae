"""Certification rules: who may be tested, the record of a free test, and the status
record (docs/interface.md §15) every certification route answers with."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.accounts import credentials
from agent_broker.accounts.models import AccountRecord
from agent_broker.certification import repository
from agent_broker.certification.probe import ProbeResult
from agent_broker.domains import service as domains
from agent_broker.domains.registrable import NoRegistrableDomain, registrable_domain
from agent_broker.problems import Problem, Reason


class CertificationDomainUnverified(Problem):
    status, reason = 409, Reason.certification_domain_unverified
    default_detail = (
        "Certification needs a deal route on a domain you proved (GET and POST "
        "/v1/account/domain, /verify)."
    )


def testable_route(session: Session, account: AccountRecord) -> str:
    """The account's deal route, if it is on a domain the account proved; else 409."""
    if not account.deal_route:
        raise CertificationDomainUnverified(
            "Set a deal route first (PUT /v1/account/route), on a domain you then prove."
        )
    try:
        domain = registrable_domain(account.deal_route)
    except NoRegistrableDomain:
        raise CertificationDomainUnverified() from None
    if not domains.has_claim_on(session, account.id, domain):
        raise CertificationDomainUnverified(
            f"The deal route's domain {domain} is not proved yet (POST /v1/account/domain/verify)."
        )
    return account.deal_route


def account_row(session: Session, account_id: str) -> AccountRecord:
    account = credentials.account_by_id(session, account_id)
    assert account is not None  # a certification record's account exists (foreign key)
    return account


def record_of(session: Session, account_id: str, *, lock: bool = False) -> Any:
    """The account's record; `lock` holds its row until the transaction ends (PostgreSQL;
    SQLite's writers are one at a time anyway), so two charges of one period cannot race."""
    return repository.record(session, account_id, lock=lock)


def follow_route(session: Session, account_id: str, route: str, *, now: datetime) -> None:
    """Make `route`, if still the account's deal route, the one whose checks count; a
    different route starts the window anew."""
    repository.follow_route(session, account_id, route, now=now)


def restart_window(session: Session, account_id: str) -> None:
    """Nothing checked so far counts and the badge goes, at once, in the caller's
    transaction: the deal route changed (or was cleared), or a paid period starts after
    an unpaid gap. The window opens again when the route is next checked (follow_route)."""
    repository.restart_window(session, account_id)


def record_check(
    session: Session, account_id: str, kind: str, route: str, result: ProbeResult, *, now: datetime
) -> None:
    repository.insert_check(
        session,
        id=str(uuid.uuid4()),
        account_id=account_id,
        kind=kind,
        route=route,
        checked_at=now,
        passed=result.passed,
        status_code=result.status_code,
        detail=result.detail,
    )


def record_test(
    session: Session, account_id: str, route: str, result: ProbeResult, *, now: datetime
) -> None:
    """A free test: the record's last test, and a check that never counts for the badge."""
    repository.open_record(session, account_id)
    repository.set_last_test(
        session,
        account_id,
        at=now,
        route=route,
        passed=result.passed,
        status_code=result.status_code,
        detail=result.detail,
    )
    record_check(session, account_id, "test", route, result, now=now)


def _iso(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else None


def status_view(session: Session, account: AccountRecord, *, now: datetime) -> dict[str, Any]:
    record = record_of(session, account.id)
    recent = repository.recent_checks(session, account.id)
    subscribed = bool(record and record.period_end and record.period_end > now)
    window_route = record.window_route if record else None
    latest_scheduled = next(
        (check for check in recent if check.kind == "scheduled" and check.route == window_route),
        None,
    )
    last_test = None
    if record is not None and record.last_test_at is not None:
        last_test = {
            "at": _iso(record.last_test_at),
            "route": record.last_test_route,
            "passed": record.last_test_passed,
            "status_code": record.last_test_status_code,
            "detail": record.last_test_detail,
        }
    return {
        "subscribed": subscribed,
        "renew": bool(record and record.renew and subscribed),
        "period_start": _iso(record.period_start) if subscribed and record else None,
        "period_end": _iso(record.period_end) if subscribed and record else None,
        "window_route": window_route,
        "passing_now": bool(
            subscribed
            and window_route == account.deal_route
            and latest_scheduled is not None
            and latest_scheduled.passed
        ),
        # The stored badge, unless its paid period has ended since (as on every read).
        "public_certified": bool(subscribed and record.public_certified),
        "checked_on": record.checked_on.isoformat() if record and record.checked_on else None,
        "last_test": last_test,
        "recent": [
            {
                "at": _iso(check.checked_at),
                "kind": check.kind,
                "route": check.route or None,
                "passed": check.passed,
                "status_code": check.status_code,
                "detail": check.detail,
            }
            for check in recent
        ],
    }
