"""The `certification-badges` job: the daily badge. An account is certified when, over the
last 7 days of its evidence window (the current deal route, since it became the route
checked in the current run of paid periods), at least 4 scheduled checks ran and at least
90% of them passed, and a paid period is running. Free tests never count.

The badge says only what is true now: a route change or a fresh paid period empties the
window and withdraws the badge in its own transaction (service.restart_window), and every
read of the badge also asks that the paid period has not ended, so a lapse shows at once,
before any job runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timedelta

from sqlalchemy import Integer, bindparam, case, func, select, update
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account
from agent_broker.certification.models import Certification, CertificationCheck
from agent_broker.db.prepared import Prepared

WINDOW = timedelta(days=7)
MIN_CHECKS = 4
PASS_PERCENT = 90

_records = Certification.__table__
_checks = CertificationCheck.__table__
_accounts = Account.__table__
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


def certified_later(session: Session, account_id: str, *, now: datetime) -> Callable[[], bool]:
    """Whether the account holds the badge, its lookup sent with the session's next round
    trip (Prepared.later): call what it returns for the answer."""
    later = _CERTIFIED_ONE.later(session, account_id=account_id, now=now)
    return lambda: bool(later.all())


def certified_accounts(
    session: Session, account_ids: set[str], *, now: datetime
) -> dict[str, date]:
    """The accounts among these that hold the badge, with the day it was last set."""
    if not account_ids:
        return {}
    if len(account_ids) == 1:
        (only,) = account_ids
        rows = _CERTIFIED_ONE.all(session, account_id=only, now=now)
    else:
        statement = _CERTIFIED.where(_records.c.account_id.in_(account_ids))
        rows = session.execute(statement, {"now": now}).all()
    return {row.account_id: row.checked_on for row in rows}


def is_certified(passed: int, total: int) -> bool:
    return total >= MIN_CHECKS and passed * 100 >= total * PASS_PERCENT


def update_badges(session: Session, *, now: datetime) -> tuple[int, int]:
    """Set every record's badge as of `now`; returns (records, certified)."""
    certified = 0
    rows = _EVIDENCE.all(session, since=now - WINDOW)
    for row in rows:
        # A route changed since the last check restarts the window: nothing counts yet; and
        # no badge outlives its paid period.
        badge = (
            row.period_end is not None
            and row.period_end > now
            and row.window_route == row.deal_route
            and is_certified(row.passed, row.total)
        )
        certified += badge
        _SET_BADGE.execute(session, account_id=row.account_id, certified=badge, day=now.date())
    return len(rows), certified


def badges_job(session: Session, settings: object, now: datetime) -> str:
    records, certified = update_badges(session, now=now)
    return f"updated {records} badges, {certified} certified"
