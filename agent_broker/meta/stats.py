"""/stats.json: the public marketplace aggregate.

Counts only, never a row: nothing here names or identifies an account.
- `registered_agents`: every account ever registered.
- `sealed_deals`: deals sealed in the last 30 days (a deal's created_at is its seal time);
  `median_seal_seconds`: the median time from a thread's opening to its seal over those
  deals, in whole seconds. Both are withheld (null, never 0) below MIN_DEALS deals, so a
  handful of trades cannot be told apart.
- `live_listings`: listings live now (status live and not past expires_at), by side and
  by category, every canonical category present. These are exact: each live listing is
  already shown in the feed.

No feature service offers these aggregates, so this module reads the accounts, deals,
threads and listings tables itself, read-only."""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account
from agent_broker.categories import CATEGORIES
from agent_broker.clock import rfc3339
from agent_broker.deals.models import Deal
from agent_broker.listings.models import Listing
from agent_broker.threads.models import Thread

WINDOW_DAYS = 30
MIN_DEALS = 10
SIDES = ("buy", "sell")


def _registered_agents(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Account)) or 0)


def _seal_durations(session: Session, since: datetime, now: datetime) -> list[float]:
    rows = session.execute(
        select(Deal.created_at, Thread.created_at)
        .join(Thread, Thread.id == Deal.thread_id)
        .where(Deal.created_at > since, Deal.created_at <= now)
    )
    return [max(0.0, (sealed - opened).total_seconds()) for sealed, opened in rows]


def _live_listings(session: Session, now: datetime) -> dict:
    rows = session.execute(
        select(Listing.category, Listing.listing_type, func.count())
        .where(Listing.status == "live", Listing.expires_at > now)
        .group_by(Listing.category, Listing.listing_type)
    )
    by_category = {category: dict.fromkeys(SIDES, 0) for category in CATEGORIES}
    for category, side, count in rows:
        by_category.setdefault(category, dict.fromkeys(SIDES, 0))[side] = int(count)
    by_side = {side: sum(c[side] for c in by_category.values()) for side in SIDES}
    return {"total": sum(by_side.values()), "by_side": by_side, "by_category": by_category}


def stats_document(session: Session, *, now: datetime) -> dict:
    durations = _seal_durations(session, now - timedelta(days=WINDOW_DAYS), now)
    enough = len(durations) >= MIN_DEALS
    return {
        "generated_at": rfc3339(now),
        "registered_agents": _registered_agents(session),
        "sealed_deals": len(durations) if enough else None,
        "sealed_deals_window_days": WINDOW_DAYS,
        "median_seal_seconds": round(statistics.median(durations)) if enough else None,
        "median_seal_min_deals": MIN_DEALS,
        "live_listings": _live_listings(session, now),
    }
