"""The certification statements: the account's record (subscription, evidence window,
badge, last free test), its checks, and what the jobs walk, prepared
(agent_broker.db.prepared)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import Integer, bindparam, case, exists, func, or_, select, update
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account
from agent_broker.certification.models import Certification, CertificationCheck
from agent_broker.db.prepared import Prepared, inserting, inserting_unless_taken

RECENT_RESULTS = 10

_records = Certification.__table__
_checks = CertificationCheck.__table__
_accounts = Account.__table__
_RECORD = Prepared(select(_records).where(_records.c.account_id == bindparam("account_id")))
_RECORD_LOCKED = Prepared(
    select(_records).where(_records.c.account_id == bindparam("account_id")).with_for_update()
)
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
_START = Prepared(
    update(_records)
    .where(_records.c.account_id == bindparam("account_id"))
    .values(period_start=bindparam("start"), period_end=bindparam("end"), renew=True)
)
_SET_RENEW = Prepared(
    update(_records)
    .where(_records.c.account_id == bindparam("account_id"))
    .values(renew=bindparam("renew"))
)
_DUE = Prepared(
    select(_records.c.account_id, _records.c.period_end)
    .where(_records.c.renew.is_(True), _records.c.period_end <= bindparam("now"))
    .order_by(_records.c.period_end, _records.c.account_id)
)
_SUBSCRIBED = Prepared(
    select(_records.c.account_id, _accounts.c.deal_route)
    .join(_accounts, _accounts.c.id == _records.c.account_id)
    .where(_records.c.period_end > bindparam("now"), _accounts.c.status == "active")
    .order_by(_records.c.account_id)
)
_EVIDENCE = Prepared(
    select(
        _records.c.account_id,
        _records.c.window_route,
        _records.c.period_end,
        _accounts.c.deal_route,
        func.count(_checks.c.id).label("total"),
        func.coalesce(func.sum(case((_checks.c.passed, 1), else_=0)), 0)
        .cast(Integer)
        .label("passed"),
    )
    .join(_accounts, _accounts.c.id == _records.c.account_id)
    .outerjoin(
        _checks,
        (_checks.c.account_id == _records.c.account_id)
        & (_checks.c.kind == "scheduled")
        & (_checks.c.route == _records.c.window_route)
        & (_checks.c.checked_at >= _records.c.window_started_at)
        & (_checks.c.checked_at > bindparam("since")),
    )
    .group_by(
        _records.c.account_id,
        _records.c.window_route,
        _records.c.period_end,
        _accounts.c.deal_route,
    )
)
_SET_BADGE = Prepared(
    update(_records)
    .where(_records.c.account_id == bindparam("account_id"))
    .values(public_certified=bindparam("certified"), checked_on=bindparam("day"))
)


# The stored badge counts only while its paid period runs: a lapse is seen on read, from
# the same row, so the hot listing and record reads need no job to have run first.
_CERTIFIED = select(_records.c.account_id, _records.c.checked_on).where(
    _records.c.public_certified.is_(True), _records.c.period_end > bindparam("now")
)
_CERTIFIED_ONE = Prepared(_CERTIFIED.where(_records.c.account_id == bindparam("account_id")))


def record(session: Session, account_id: str, *, lock: bool = False) -> Any:
    """The account's record, or None; `lock` holds its row until the transaction ends."""
    return (_RECORD_LOCKED if lock else _RECORD).one_or_none(session, account_id=account_id)


def open_record(session: Session, account_id: str) -> None:
    """An empty record for the account, unless it has one."""
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


def set_last_test(
    session: Session,
    account_id: str,
    *,
    at: datetime,
    route: str,
    passed: bool,
    status_code: int | None,
    detail: str,
) -> None:
    _LAST_TEST.execute(
        session,
        account_id=account_id,
        at=at,
        route=route,
        passed=passed,
        status_code=status_code,
        detail=detail,
    )


def insert_check(session: Session, **columns: Any) -> None:
    """Insert a check, given every column."""
    _INSERT_CHECK.execute(session, **columns)


def recent_checks(session: Session, account_id: str) -> list[Any]:
    """The account's last RECENT_RESULTS checks, newest first."""
    return _RECENT.all(session, account_id=account_id)


def follow_route(session: Session, account_id: str, route: str, *, now: datetime) -> None:
    """Start the evidence window on `route` now, if it is still the account's deal route
    and not already the window's."""
    _FOLLOW_ROUTE.execute(session, account_id=account_id, route=route, now=now)


def restart_window(session: Session, account_id: str) -> None:
    """Empty the evidence window and take the badge away."""
    _RESTART_WINDOW.execute(session, account_id=account_id)


def start_period(session: Session, account_id: str, *, start: datetime, end: datetime) -> None:
    """A paid period from `start` to `end`, renewing."""
    _START.execute(session, account_id=account_id, start=start, end=end)


def set_renew(session: Session, account_id: str, *, renew: bool) -> None:
    _SET_RENEW.execute(session, account_id=account_id, renew=renew)


def due_for_renewal(session: Session, *, now: datetime) -> list[Any]:
    """(account_id, period_end) of the renewing records whose period has ended, the
    longest ended first."""
    return _DUE.all(session, now=now)


def subscribed_routes(session: Session, *, now: datetime) -> list[Any]:
    """(account_id, deal_route) of the active accounts in a paid period."""
    return _SUBSCRIBED.all(session, now=now)


def badge_evidence(session: Session, *, since: datetime) -> list[Any]:
    """Each record's window route, period end and deal route, with the number of its
    scheduled checks of the window route since `since` (total) and of those that passed."""
    return _EVIDENCE.all(session, since=since)


def set_badge(session: Session, account_id: str, *, certified: bool, day: date) -> None:
    _SET_BADGE.execute(session, account_id=account_id, certified=certified, day=day)


def certified_rows_later(
    session: Session, account_id: str, *, now: datetime
) -> Callable[[], list[Any]]:
    """certified_rows() of one account, the lookup sent with the session's next round trip
    (where that saves one): call what it returns for them."""
    return _CERTIFIED_ONE.later(session, account_id=account_id, now=now).all


def certified_rows(session: Session, account_ids: set[str], *, now: datetime) -> Sequence[Any]:
    """(account_id, checked_on) of the accounts among these that hold the badge."""
    if len(account_ids) == 1:
        (only,) = account_ids
        return _CERTIFIED_ONE.all(session, account_id=only, now=now)
    statement = _CERTIFIED.where(_records.c.account_id.in_(account_ids))
    return session.execute(statement, {"now": now}).all()
