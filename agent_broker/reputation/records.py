"""The reputation records as others see them: the public record (SPEC 2.3), the
counterparty record embedded in thread reads, and the claims of a signed statement."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts.models import Account
from agent_broker.domains import service as domains
from agent_broker.ledger import service as ledger
from agent_broker.reputation import service as reputation
from agent_broker.reputation.models import ReputationSales, ReputationStats
from agent_broker.reputation.scorecard import (
    SEED_RATING_COUNT,
    Facet,
    ScorecardInputs,
    derive_scorecard,
)

ROLES = ("seller", "buyer")


def _public_facet(counters: dict[str, int]) -> dict[str, Any]:
    # Only the seeded rating and no deal: the record says so rather than pass it as earned.
    warm = counters["rating_count"] == SEED_RATING_COUNT and counters["finalized_count"] == 0
    return {**counters, "warm_start": warm}


def _standing(
    session: Session, accounts: list[Account], now: datetime
) -> dict[str, dict[str, Any]]:
    """Counters, flags and scorecard of each account, in a fixed number of queries."""
    ids = {account.id for account in accounts}
    facets = reputation.facets_for(session, ids)
    funded = ledger.funded_accounts(session, ids)
    verified = domains.verified_accounts(session, ids)
    stats = {
        row.account_id: row
        for row in session.scalars(
            select(ReputationStats).where(ReputationStats.account_id.in_(ids))
        )
    }
    sales: dict[str, dict[str, int]] = {}
    for row in session.execute(
        select(ReputationSales.account_id, ReputationSales.category, ReputationSales.sales).where(
            ReputationSales.account_id.in_(ids)
        )
    ):
        sales.setdefault(row.account_id, {})[row.category] = row.sales
    records = {}
    for account in accounts:
        counters = facets[account.id]
        row = stats.get(account.id)
        card = derive_scorecard(
            ScorecardInputs(
                buyer=Facet(**counters["buyer"]),
                seller=Facet(**counters["seller"]),
                disputes=row.disputes if row else 0,
                distinct_counterparties=row.counterparties if row else 0,
                sales_by_category=sales.get(account.id, {}),
                created_at=account.created_at,
                first_deal_at=row.first_deal_at if row else None,
                last_active_at=row.last_active_at if row else None,
                latency_counts=_columns(row, ReputationStats.LATENCIES),
                score_counts=_columns(row, ReputationStats.SCORES),
                now=now,
            )
        )
        records[account.id] = {
            **{role: _public_facet(counters[role]) for role in ROLES},
            "funded": account.id in funded,
            "domain_verified": account.id in verified,
            "scorecard": card,
        }
    return records


def _columns(row: ReputationStats | None, names: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(getattr(row, name) if row else 0 for name in names)


def public_record(session: Session, account: Account, *, now: datetime) -> dict[str, Any]:
    """The public record read by handle (SPEC 2.3)."""
    record = _standing(session, [account], now)[account.id]
    return {"handle": account.handle, **record, "as_of": clock.rfc3339(now)}


def statement_claims(session: Session, account: Account, *, now: datetime) -> dict[str, Any]:
    """What a signed statement carries: the public record's fields, every warm_start flag
    included, but not the scorecard, so a change to the derivation never invalidates it."""
    record = public_record(session, account, now=now)
    del record["scorecard"]
    return record


def counterparty_records(
    session: Session, account_ids: set[str], *, now: datetime
) -> dict[str, dict[str, Any]]:
    """Counterparty records keyed by account id, for embedding in thread reads. The records
    themselves carry no handle, endpoint or account id."""
    if not account_ids:
        return {}
    accounts = list(session.scalars(select(Account).where(Account.id.in_(account_ids))))
    return _standing(session, accounts, now)


def find_by_handle(session: Session, handle: str) -> Account | None:
    # Malformed and unknown handles are indistinguishable to the caller (both 404).
    if len(handle) != 12 or any(c not in "0123456789abcdef" for c in handle):
        return None
    return session.scalars(select(Account).where(Account.handle == handle)).one_or_none()
