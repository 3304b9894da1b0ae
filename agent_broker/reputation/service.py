"""Reputation facets: seeded at registration, read for the account and public records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from agent_broker.reputation import repository
from agent_broker.reputation.models import ReputationFacet, ReputationStats
from agent_broker.reputation.scorecard import (
    SEED_RATING_COUNT,
    SEED_RATING_SUM,
    latency_bucket_index,
)

ROLES = ("buyer", "seller")


def seed_facets(session: Session, account_id: str) -> None:
    session.add_all(
        ReputationFacet(
            account_id=account_id,
            role=role,
            rating_sum=SEED_RATING_SUM,
            rating_count=SEED_RATING_COUNT,
            finalized_count=0,
            non_delivery_count=0,
        )
        for role in ROLES
    )
    session.add(ReputationStats(account_id=account_id))
    session.flush()


def facets(session: Session, account_id: str) -> dict[str, dict[str, int]]:
    return facets_for(session, {account_id}).get(account_id, {})


def facets_later(session: Session, account_id: str) -> Callable[[], dict[str, dict[str, int]]]:
    """facets(), its lookup sent with the session's next round trip (where that saves
    one): call what it returns for them."""
    rows = repository.facet_rows_later(session, account_id)
    return lambda: _by_account(rows()).get(account_id, {})


def facets_for(session: Session, account_ids: set[str]) -> dict[str, dict[str, dict[str, int]]]:
    """Facets of several accounts in one query: {account_id: {role: counters}}."""
    if not account_ids:
        return {}
    return _by_account(repository.facet_rows(session, account_ids))


def _by_account(rows: Iterable[Any]) -> dict[str, dict[str, dict[str, int]]]:
    found: dict[str, dict[str, dict[str, int]]] = {}
    for row in rows:
        found.setdefault(row.account_id, {})[row.role] = {
            "rating_sum": row.rating_sum,
            "rating_count": row.rating_count,
            "finalized_count": row.finalized_count,
            "non_delivery_count": row.non_delivery_count,
        }
    return found


def _bump(session: Session, account_id: str, role: str, **increments: int) -> None:
    # In-place increments: concurrent seals and ratings never lose an update.
    table = ReputationFacet.__table__
    session.execute(
        update(table)
        .where(table.c.account_id == account_id, table.c.role == role)
        .values({name: table.c[name] + by for name, by in increments.items()})
    )


def _bump_stats(session: Session, account_id: str, **increments: int) -> None:
    table = ReputationStats.__table__
    session.execute(
        update(table)
        .where(table.c.account_id == account_id)
        .values({name: table.c[name] + by for name, by in increments.items()})
    )


def record_seal(session: Session, *, parties: dict[str, str], category: str, now: datetime) -> None:
    """A counting deal sealed: each party's facet for the role they played moves, the pair
    is remembered, the seller's sale counts in the listing's category, a first deal
    starts the trading clock, and both parties were active now. `parties` maps role
    ('buyer', 'seller') to account id. Rows are written in account order."""
    for role, account_id in sorted(parties.items(), key=lambda item: item[1]):
        repository.count_sealed_deal(session, account_id, role)
    buyer, seller = parties["buyer"], parties["seller"]
    first, second = sorted((buyer, seller))
    new = repository.remember_pair(session, first, second)
    repository.count_sale(session, seller, category)
    for account_id in sorted({first, second}):
        repository.record_sealed_stats(
            session, account_id, now=now, new_counterparties=1 if account_id in new else 0
        )


def record_rating(
    session: Session,
    *,
    ratee_id: str,
    role: str,
    score: int,
    delivered: bool | None,
    revealed_at: datetime,
    now: datetime,
) -> None:
    """An earned rating lands in the ratee's facet for the role they played in the deal;
    only an explicit delivered=false counts as non-delivery. The score and the time from
    reveal to rating feed the scorecard's distribution and latency."""
    increments = {"rating_sum": score, "rating_count": 1}
    if delivered is False:
        increments["non_delivery_count"] = 1
    _bump(session, ratee_id, role, **increments)
    latency = ReputationStats.LATENCIES[latency_bucket_index(now - revealed_at)]
    _bump_stats(session, ratee_id, **{ReputationStats.SCORES[score - 1]: 1, latency: 1})


def record_dispute(session: Session, *, against_id: str) -> None:
    """A claim filed against the account on a counting deal (nothing is adjudicated)."""
    _bump_stats(session, against_id, disputes=1)


ESCROW_COUNTERS = {
    "released": "escrow_released",
    "refunded": "escrow_refunded",
    "split": "escrow_split",
}


def record_escrow(session: Session, *, seller_id: str, outcome: str, on_time: bool) -> None:
    """An escrow deal settled (released, refunded or split): it counts on the seller's
    record, with whether the work was delivered before its deadline."""
    repository.count_escrow(session, seller_id, column=ESCROW_COUNTERS[outcome], on_time=on_time)


def touch(session: Session, account_ids: list[str], *, now: datetime) -> None:
    """A billable action: the accounts were active now (liveness, not trade recency)."""
    for account_id in sorted(set(account_ids)):
        repository.touch(session, account_id, now=now)
