"""Certification rules: who may be tested, the record of a free test, and the status
record (FACTS 4.6's proposal) every certification route answers with."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, or_, select, update
from sqlalchemy.orm import Session

from agent_broker.accounts import credentials
from agent_broker.accounts.models import Account, AccountRecord
from agent_broker.certification.models import Certification, CertificationCheck
from agent_broker.certification.probe import ProbeResult
from agent_broker.db.prepared import Prepared, inserting, inserting_unless_taken
from agent_broker.domains import service as domains
from agent_broker.domains.registrable import NoRegistrableDomain, registrable_domain
from agent_broker.problems import Problem, Reason

RECENT_RESULTS = 10

_records = Certification.__table__
_checks = CertificationCheck.__table__
_RECORD = Prepared(select(_records).where(_records.c.account_id == bindparam("account_id")))
_OPEN_RECORD = inserting_unless_taken(_records)
_LAST_TEST = Prepared(
    update(_records)
    .where(_records.c.account_id == bindparam("account_id"))
    .values(
        last_test_at=bindparam("at"),
        last_test_route=bindparam("route"),
        last_test_passed=bindparam("passed"),
        last_test_status_code=bindparam("status_code"),
        last_test_detail=bindparam("detail"),
    )
)
_INSERT_CHECK = inserting(_checks)
_RECENT = Prepared(
    select(_checks)
    .where(_checks.c.account_id == bindparam("account_id"))
    .order_by(_checks.c.checked_at.desc(), _checks.c.id)
    .limit(RECENT_RESULTS)
)


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


_accounts = Account.__table__
_FOLLOW_ROUTE = Prepared(
    update(_records)
    .where(
        _records.c.account_id == bindparam("account_id"),
        or_(_records.c.window_route.is_(None), _records.c.window_route != bindparam("route")),
        # Still the account's route: a probe answered after a route change does not move
        # the window back to the route it left.
        exists().where(
            _accounts.c.id == bindparam("account_id"),
            _accounts.c.deal_route == bindparam("route"),
        ),
    )
    .values(window_route=bindparam("route"), window_started_at=bindparam("now"))
)
_RESTART_WINDOW = Prepared(
    update(_records)
    .where(_records.c.account_id == bindparam("account_id"))
    .values(window_route=None, window_started_at=None, public_certified=False)
)


def account_row(session: Session, account_id: str) -> AccountRecord:
    account = credentials.account_by_id(session, account_id)
    assert account is not None  # a certification record's account exists (foreign key)
    return account


_RECORD_LOCKED = Prepared(
    select(_records).where(_records.c.account_id == bindparam("account_id")).with_for_update()
)


def record_of(session: Session, account_id: str, *, lock: bool = False) -> Any:
    """The account's record; `lock` holds its row until the transaction ends (PostgreSQL;
    SQLite's writers are one at a time anyway), so two charges of one period cannot race."""
    return (_RECORD_LOCKED if lock else _RECORD).one_or_none(session, account_id=account_id)


def follow_route(session: Session, account_id: str, route: str, *, now: datetime) -> None:
    """Make `route`, if still the account's deal route, the one whose checks count; a
    different route starts the window anew."""
    _FOLLOW_ROUTE.execute(session, account_id=account_id, route=route, now=now)


def restart_window(session: Session, account_id: str) -> None:
    """Nothing checked so far counts and the badge goes, at once, in the caller's
    transaction: the deal route changed (or was cleared), or a paid period starts after
    an unpaid gap. The window opens again when the route is next checked (follow_route)."""
    _RESTART_WINDOW.execute(session, account_id=account_id)


def open_record(session: Session, account_id: str) -> None:
    _OPEN_RECORD.execute(
        session,
        account_id=account_id,
        renew=False,
        period_start=None,
        period_end=None,
        window_route=None,
        window_started_at=None,
        public_certified=False,
        checked_on=None,
        last_test_at=None,
        last_test_route=None,
        last_test_passed=None,
        last_test_status_code=None,
        last_test_detail=None,
    )


def record_check(
    session: Session, account_id: str, kind: str, route: str, result: ProbeResult, *, now: datetime
) -> None:
    _INSERT_CHECK.execute(
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
    open_record(session, account_id)
    _LAST_TEST.execute(
        session,
        account_id=account_id,
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
    recent = _RECENT.all(session, account_id=account.id)
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
