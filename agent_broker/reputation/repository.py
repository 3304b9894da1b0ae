"""The reputation statements: facets, the counters a seal moves, and the evidence a record
is derived from, prepared (agent_broker.db.prepared) for one account's record and every
deal's seal. The writes whose outcome nobody reads go with the session's next round trip
where that saves one (Prepared.queue), and raise their error there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, bindparam, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from agent_broker.db.base import UTCDateTime
from agent_broker.db.prepared import Prepared
from agent_broker.reputation.models import (
    ReputationCounterparty,
    ReputationFacet,
    ReputationSales,
    ReputationStats,
)

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
# An escrow settled: one more of its outcome on the seller's record, and one more
# delivered on time when it was.
_ESCROW_SETTLED = {
    column: Prepared(
        update(_stats)
        .where(_stats.c.account_id == bindparam("account_id"))
        .values(
            {
                column: _stats.c[column] + 1,
                "escrow_on_time": _stats.c.escrow_on_time + bindparam("on_time"),
            }
        )
    )
    for column in ("escrow_released", "escrow_refunded", "escrow_split")
}
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

_ROLES = ("seller", "buyer")
# An evidence row names each facet's counters `<role>_<counter>`.
FACET_COUNTERS = ("rating_sum", "rating_count", "finalized_count", "non_delivery_count")
_STAT_COLUMNS = (
    "disputes",
    "counterparties",
    "first_deal_at",
    "last_active_at",
    *ReputationStats.SCORES,
    *ReputationStats.LATENCIES,
    *ReputationStats.ESCROW,
)


def _evidence_statement(*, single: bool) -> Select:
    """Running counters and both facets of each account: one row apiece (`single`: of the
    account bound as `id`, else of those bound as `ids`)."""
    facet_of = {role: aliased(ReputationFacet, name=f"{role}_facet") for role in _ROLES}
    seller = facet_of["seller"]
    columns = [seller.account_id.label("id")]
    columns += [getattr(ReputationStats, name) for name in _STAT_COLUMNS]
    for role, facet in facet_of.items():
        columns += [getattr(facet, name).label(f"{role}_{name}") for name in FACET_COUNTERS]
    buyer = facet_of["buyer"]
    statement = (
        select(*columns)
        .select_from(seller)
        .join(buyer, (buyer.account_id == seller.account_id) & (buyer.role == "buyer"))
        .outerjoin(ReputationStats, ReputationStats.account_id == seller.account_id)
    )
    chosen = (
        seller.account_id == bindparam("id")
        if single
        else seller.account_id.in_(bindparam("ids", expanding=True))
    )
    return statement.where(seller.role == "seller", chosen)


_EVIDENCE = _evidence_statement(single=False)
_SALES = select(_sales.c.account_id, _sales.c.category, _sales.c.sales)
# One account's record (a thread read, a lookup, an attestation): prepared statements.
_EVIDENCE_OF_ONE = Prepared(_evidence_statement(single=True))
_SALES_OF_ONE = Prepared(_SALES.where(_sales.c.account_id == bindparam("id")))


def facet_rows(session: Session, account_ids: set[str]) -> Sequence[Any]:
    """The facets of these accounts (one query), a row per account and role."""
    if len(account_ids) == 1:  # one account's record: the prepared lookup
        (only,) = account_ids
        return _FACETS_OF_ONE.all(session, account_id=only)
    return session.execute(_FACETS_OF, {"ids": list(account_ids)}).all()


def facet_rows_later(session: Session, account_id: str) -> Callable[[], list[Any]]:
    """The account's facet rows, the lookup sent with the session's next round trip (where
    that saves one): call what it returns for them."""
    return _FACETS_OF_ONE.later(session, account_id=account_id).all


def count_sealed_deal(session: Session, account_id: str, role: str) -> None:
    """One more sealed deal in the account's facet for `role` (sent with the next round
    trip)."""
    _SEALED_ONE_MORE.queue(session, account_id=account_id, role=role)


def remember_pair(session: Session, first: str, second: str) -> set[str]:
    """Remember that the two accounts (first < second) dealt; those of them for whom the
    other is a new counterparty."""
    return {row.account_id for row in _REMEMBER_PAIRS.all(session, first=first, second=second)}


def count_sale(session: Session, account_id: str, category: str) -> None:
    """One more sale of the account in the category (sent with the next round trip)."""
    _COUNT_SALE.queue(session, account_id=account_id, category=category)


def record_sealed_stats(
    session: Session, account_id: str, *, now: datetime, new_counterparties: int
) -> None:
    """A counting seal's change to the account's stats (sent with the next round trip)."""
    _SEALED_STATS.queue(
        session, account_id=account_id, now=now, new_counterparties=new_counterparties
    )


def count_escrow(session: Session, account_id: str, *, column: str, on_time: bool) -> None:
    """One more settled escrow in the seller's `column` (escrow_released, _refunded or
    _split), and in escrow_on_time if it was delivered on time (sent with the next round
    trip)."""
    _ESCROW_SETTLED[column].queue(session, account_id=account_id, on_time=int(on_time))


def touch(session: Session, account_id: str, *, now: datetime) -> None:
    """The account was last active now (sent with the next round trip)."""
    _TOUCH.queue(session, account_id=account_id, now=now)


def evidence(session: Session, ids: set[str]) -> tuple[Sequence[Any], Sequence[Any]]:
    """The evidence rows and sales rows of these accounts."""
    if len(ids) == 1:
        (only,) = ids
        return _EVIDENCE_OF_ONE.all(session, id=only), _SALES_OF_ONE.all(session, id=only)
    rows = session.execute(_EVIDENCE, {"ids": list(ids)}).all()
    sales = session.execute(_SALES.where(_sales.c.account_id.in_(ids))).all()
    return rows, sales
