"""The reputation records as others see them: the public record (docs/interface.md §12.2),
counterparty record embedded in thread reads, and the claims of a signed statement."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Row
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import directory
from agent_broker.accounts.models import AccountRecord
from agent_broker.certification import badge as certification
from agent_broker.domains import service as domains
from agent_broker.ledger import service as ledger
from agent_broker.problems import NotFound
from agent_broker.reputation import repository
from agent_broker.reputation.limiter import Limiter
from agent_broker.reputation.models import ReputationStats
from agent_broker.reputation.scorecard import (
    SEED_RATING_COUNT,
    Facet,
    ScorecardInputs,
    derive_scorecard,
)

ROLES = ("seller", "buyer")
LOOKUP_RATE_LIMIT = "600/hour"


def _public_facet(counters: dict[str, int]) -> dict[str, Any]:
    # Only the seeded rating and no deal: the record says so rather than pass it as earned.
    warm = counters["rating_count"] == SEED_RATING_COUNT and counters["finalized_count"] == 0
    return {**counters, "warm_start": warm}


def _standing(
    session: Session, created: dict[str, datetime], now: datetime
) -> dict[str, dict[str, Any]]:
    """Counters, flags and scorecard of each account (by id, with its creation time), in
    five queries however many."""
    ids = set(created)
    funded = ledger.funded_accounts(session, ids)
    verified = domains.verified_accounts(session, ids)
    certified = certification.certified_accounts(session, ids, now=now)
    evidence, sales_rows = repository.evidence(session, ids)
    sales: dict[str, dict[str, int]] = {}
    for row in sales_rows:
        sales.setdefault(row.account_id, {})[row.category] = row.sales
    records = {}
    for row in evidence:
        counters = {
            role: {name: getattr(row, f"{role}_{name}") for name in repository.FACET_COUNTERS}
            for role in ROLES
        }
        card = derive_scorecard(
            ScorecardInputs(
                buyer=Facet(**counters["buyer"]),
                seller=Facet(**counters["seller"]),
                disputes=row.disputes or 0,
                distinct_counterparties=row.counterparties or 0,
                sales_by_category=sales.get(row.id, {}),
                created_at=created[row.id],
                first_deal_at=row.first_deal_at,
                last_active_at=row.last_active_at,
                latency_counts=_columns(row, ReputationStats.LATENCIES),
                score_counts=_columns(row, ReputationStats.SCORES),
                now=now,
            )
        )
        records[row.id] = {
            **{role: _public_facet(counters[role]) for role in ROLES},
            "escrow": dict(
                zip(
                    ("released", "refunded", "split", "delivered_on_time"),
                    _columns(row, ReputationStats.ESCROW),
                    strict=True,
                )
            ),
            "funded": row.id in funded,
            "domain_verified": row.id in verified,
            "scorecard": card,
        }
        if row.id in certified:  # present only when true (docs/interface.md §12.2)
            records[row.id]["certified"] = True
            records[row.id]["certified_checked_on"] = certified[row.id].isoformat()
    return records


def _columns(row: Row, names: tuple[str, ...]) -> tuple[int, ...]:
    # No stats row (an account older than the counters' table, never backfilled): zeros.
    return tuple(getattr(row, name) or 0 for name in names)


def public_record(session: Session, account: AccountRecord, *, now: datetime) -> dict[str, Any]:
    """The public record of an account (docs/interface.md §12.2)."""
    found = _standing(session, {account.id: account.created_at}, now)
    if account.id not in found:
        raise NotFound("No reputation record has this handle.")
    record = found[account.id]
    return {"handle": account.handle, **record, "as_of": clock.rfc3339(now)}


def lookup(
    session: Session, handle: str, *, limiter: Limiter, source: str, now: datetime
) -> dict[str, Any]:
    """GET /v1/reputation/{handle}: 600 lookups per hour per source (docs/interface.md §12.2),
    misses included so handles cannot be enumerated for free; unknown and malformed handles are both
    404."""
    limiter.hit("reputation-lookup", LOOKUP_RATE_LIMIT, source)
    account = directory.find_by_handle(session, handle)
    if account is None:
        raise NotFound("No reputation record has this handle.")
    return public_record(session, account, now=now)


def statement_claims(session: Session, account: AccountRecord, *, now: datetime) -> dict[str, Any]:
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
    return _standing(session, directory.created_at_of(session, account_ids), now)
