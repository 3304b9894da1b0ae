"""Reputation facets: seeded at registration, read for the account and public records."""

from __future__ import annotations

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from agent_broker.reputation.models import ReputationFacet

ROLES = ("buyer", "seller")
# Every account starts each role with one synthetic five-star rating.
SEED_RATING_SUM = 5
SEED_RATING_COUNT = 1
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
    session.flush()


def facets(session: Session, account_id: str) -> dict[str, dict[str, int]]:
    return facets_for(session, {account_id}).get(account_id, {})


def facets_for(session: Session, account_ids: set[str]) -> dict[str, dict[str, dict[str, int]]]:
    """Facets of several accounts in one query: {account_id: {role: counters}}."""
    if not account_ids:
        return {}
    found: dict[str, dict[str, dict[str, int]]] = {}
    for row in session.execute(_FACETS_OF, {"ids": list(account_ids)}):
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


def record_seal(session: Session, *, parties: dict[str, str]) -> None:
    """A counting deal sealed: each party's facet for the role they played moves.
    `parties` maps role ('buyer', 'seller') to account id."""
    for role, account_id in parties.items():
        _bump(session, account_id, role, finalized_count=1)


def record_rating(
    session: Session, *, ratee_id: str, role: str, score: int, delivered: bool | None
) -> None:
    """An earned rating lands in the ratee's facet for the role they played in the deal;
    only an explicit delivered=false counts as non-delivery."""
    increments = {"rating_sum": score, "rating_count": 1}
    if delivered is False:
        increments["non_delivery_count"] = 1
    _bump(session, ratee_id, role, **increments)
