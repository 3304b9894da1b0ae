"""Reputation facets: seeded at registration, read for the account and public records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from agent_broker.db.base import UTCDateTime
from agent_broker.db.prepared import Prepared
from agent_broker.reputation.models import (
    ReputationCounterparty,
    ReputationFacet,
    ReputationSales,
    ReputationStats,
)
from agent_broker.reputation.scorecard import (
    SEED_RATING_COUNT,
    SEED_RATING_SUM,
    latency_bucket_index,
)

ROLES = ("buyer", "seller")
_facets = ReputationFacet.__table__
_stats = ReputationStats.__table__
_FACETS_OF_ONE = Prepared(
    select(
        _facets.c.account_id,
        _facets.c.role,
        _facets.c.rating_sum,
        _facets.c.rating_count,
        _facets.c.finalized_count,
        _facets.c.non_delivery_count,
    ).where(_facets.c.account_id == bindparam("account_id"))
)
# What a counting seal writes, prepared once (every deal runs them).
_SEALED_ONE_MORE = Prepared(
    update(_facets)
    .where(_facets.c.account_id == bindparam("account_id"), _facets.c.role == bindparam("role"))
    .values(finalized_count=_facets.c.finalized_count + 1)
)
_pairs = ReputationCounterparty.__table__
_sales = ReputationSales.__table__


def _upsert_module(dialect: str):  # noqa: ANN202 - the dialect's module, for its insert()
    return postgresql if dialect == "postgresql" else sqlite


# Both sides of a pair in one statement, in account order (so two seals of the same pair
# take the index entries in the same order). rowcount is not reliable for ON CONFLICT on
# every driver: RETURNING names the sides whose pair was new.
_REMEMBER_PAIRS = Prepared(
    lambda dialect: (
        _upsert_module(dialect)
        .insert(_pairs)
        .values(
            [
                {"account_id": bindparam("first"), "counterparty_id": bindparam("second")},
                {"account_id": bindparam("second"), "counterparty_id": bindparam("first")},
            ]
        )
        .on_conflict_do_nothing()
        .returning(_pairs.c.account_id)
    )
)
_COUNT_SALE = Prepared(
    lambda dialect: (
        _upsert_module(dialect)
        .insert(_sales)
        .values(account_id=bindparam("account_id"), category=bindparam("category"), sales=1)
        .on_conflict_do_update(
            index_elements=[_sales.c.account_id, _sales.c.category],
            set_={"sales": _sales.c.sales + 1},
        )
    )
)
# A counting seal's whole change to one account's stats: the trading clock starts at the
# first deal, the account was active now, and a new counterparty counts once.
_SEALED_STATS = Prepared(
    update(_stats)
    .where(_stats.c.account_id == bindparam("account_id"))
    .values(
        first_deal_at=func.coalesce(_stats.c.first_deal_at, bindparam("now", type_=UTCDateTime())),
        last_active_at=bindparam("now", type_=UTCDateTime()),
        counterparties=_stats.c.counterparties + bindparam("new_counterparties"),
    )
)
_TOUCH = Prepared(
    update(_stats)
    .where(_stats.c.account_id == bindparam("account_id"))
    .values(last_active_at=bindparam("now"))
)
_FACETS_OF = select(
    ReputationFacet.account_id,
    ReputationFacet.role,
    ReputationFacet.rating_sum,
    ReputationFacet.rating_count,
    ReputationFacet.finalized_count,
    ReputationFacet.non_delivery_count,
).where(ReputationFacet.account_id.in_(bindparam("ids", expanding=True)))


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
    """facets(), its lookup sent with the session's next round trip (Prepared.later): call
    what it returns for them."""
    later = _FACETS_OF_ONE.later(session, account_id=account_id)
    return lambda: _by_account(later.all()).get(account_id, {})


def facets_for(session: Session, account_ids: set[str]) -> dict[str, dict[str, dict[str, int]]]:
    """Facets of several accounts in one query: {account_id: {role: counters}}."""
    if not account_ids:
        return {}
    if len(account_ids) == 1:  # one account's record: the prepared lookup
        (only,) = account_ids
        rows = _FACETS_OF_ONE.all(session, account_id=only)
    else:
        rows = session.execute(_FACETS_OF, {"ids": list(account_ids)}).all()
    return _by_account(rows)


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


def _count_sale(session: Session, seller_id: str, category: str) -> None:
    _COUNT_SALE.queue(session, account_id=seller_id, category=category)


def record_seal(session: Session, *, parties: dict[str, str], category: str, now: datetime) -> None:
    """A counting deal sealed: each party's facet for the role they played moves, the pair
    is remembered, the seller's sale counts in the listing's category, a first deal
    starts the trading clock, and both parties were active now. `parties` maps role
    ('buyer', 'seller') to account id. Rows are written in account order."""
    for role, account_id in sorted(parties.items(), key=lambda item: item[1]):
        _SEALED_ONE_MORE.queue(session, account_id=account_id, role=role)
    buyer, seller = parties["buyer"], parties["seller"]
    first, second = sorted((buyer, seller))
    new = {row.account_id for row in _REMEMBER_PAIRS.all(session, first=first, second=second)}
    _count_sale(session, seller, category)
    for account_id in sorted({first, second}):
        _SEALED_STATS.queue(
            session,
            account_id=account_id,
            now=now,
            new_counterparties=1 if account_id in new else 0,
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


def touch(session: Session, account_ids: list[str], *, now: datetime) -> None:
    """A billable action: the accounts were active now (liveness, not trade recency)."""
    for account_id in sorted(set(account_ids)):
        _TOUCH.queue(session, account_id=account_id, now=now)
