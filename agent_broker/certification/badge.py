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

from sqlalchemy.orm import Session

from agent_broker.certification import repository

WINDOW = timedelta(days=7)
MIN_CHECKS = 4
PASS_PERCENT = 90


def certified_later(session: Session, account_id: str, *, now: datetime) -> Callable[[], bool]:
    """Whether the account holds the badge, its lookup sent with the session's next round
    trip (where that saves one): call what it returns for the answer."""
    rows = repository.certified_rows_later(session, account_id, now=now)
    return lambda: bool(rows())


def certified_accounts(
    session: Session, account_ids: set[str], *, now: datetime
) -> dict[str, date]:
    """The accounts among these that hold the badge, with the day it was last set."""
    if not account_ids:
        return {}
    rows = repository.certified_rows(session, account_ids, now=now)
    return {row.account_id: row.checked_on for row in rows}


def is_certified(passed: int, total: int) -> bool:
    return total >= MIN_CHECKS and passed * 100 >= total * PASS_PERCENT


def update_badges(session: Session, *, now: datetime) -> tuple[int, int]:
    """Set every record's badge as of `now`; returns (records, certified)."""
    certified = 0
    rows = repository.badge_evidence(session, since=now - WINDOW)
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
        repository.set_badge(session, row.account_id, certified=badge, day=now.date())
    return len(rows), certified


def badges_job(session: Session, settings: object, now: datetime) -> str:
    records, certified = update_badges(session, now=now)
    return f"updated {records} badges, {certified} certified"
