"""The reputation scorecard (docs/interface.md §12.3): a pure derivation from the two facets and a
few counters.

Arithmetic is integer only; no float ever enters the output.

Rounding: every ratio (average_rating_hundredths, delivery_rate_bp, rating_coverage_bp,
dispute_rate_bp) is rounded half-up to the nearest integer, computed as
``(2 * a * k + b) // (2 * b)`` (so 2 of 3 -> 6667 bp, 1 of 3 -> 3333 bp, 4.925 stars -> 493).

Median: for an even number of reveal->rating gaps the lower median is used, so the label is
always the bucket of an observed gap (never an average of two). Gaps arrive as counts per
bucket (see latency_bucket_index); the median's bucket is read off the histogram exactly.

Day counts are whole days (floored) since the timestamp; a timestamp in the future (clock skew)
counts as 0 days rather than a negative number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# Each role is seeded with one synthetic five-star rating (docs/interface.md §12.1).
SEED_RATING_SUM = 5
SEED_RATING_COUNT = 1
MIN_RATED_DEALS = 5
VERIFIED_CAPABILITY_MIN_SALES = 3

_DAY = timedelta(days=1)
# Upper bounds (exclusive) of each latency bucket; the last bucket is open-ended because
# ratings close 7 days after reveal, so no real gap exceeds it.
_LATENCY_BUCKETS: tuple[tuple[timedelta | None, str], ...] = (
    (timedelta(hours=1), "<1h"),
    (timedelta(hours=4), "1h-4h"),
    (timedelta(hours=24), "4h-24h"),
    (timedelta(hours=72), "1d-3d"),
    (None, "3d-7d"),
)


@dataclass(frozen=True)
class Facet:
    rating_sum: int
    rating_count: int
    finalized_count: int
    non_delivery_count: int


@dataclass(frozen=True)
class ScorecardInputs:
    buyer: Facet
    seller: Facet
    disputes: int
    distinct_counterparties: int
    sales_by_category: Mapping[str, int]  # sealed deals as seller, per category
    created_at: datetime | None
    first_deal_at: datetime | None
    last_active_at: datetime | None
    latency_counts: Sequence[int]  # reveal -> rating gaps, counted per latency bucket
    score_counts: Sequence[int]  # earned ratings per score 1..5, both roles
    now: datetime


def _ratio_half_up(numerator: int, denominator: int, scale: int) -> int:
    """numerator * scale / denominator, rounded half-up, in integers only."""
    return (2 * numerator * scale + denominator) // (2 * denominator)


def _whole_days(since: datetime, now: datetime) -> int:
    return max(0, (now - since) // _DAY)


LATENCY_LABELS = tuple(label for _, label in _LATENCY_BUCKETS)


def latency_bucket_index(gap: timedelta) -> int:
    """Which latency bucket a reveal->rating gap falls in (index into LATENCY_LABELS)."""
    for index, (upper, _) in enumerate(_LATENCY_BUCKETS):
        if upper is None or gap < upper:
            return index
    raise AssertionError("unreachable: the last bucket is open-ended")


def _median_latency(counts: Sequence[int]) -> str | None:
    total = sum(counts)
    if total == 0:
        return None
    position = (total - 1) // 2  # lower median, 0-based
    for label, count in zip(LATENCY_LABELS, counts, strict=True):
        if position < count:
            return label
        position -= count
    raise AssertionError("unreachable: position is below the total")


def derive_scorecard(inputs: ScorecardInputs) -> dict[str, Any]:
    """Derive the scorecard of docs/interface.md §12.3; optional fields are omitted (never zero)
    when not defined.

    Rounding is half-up to an integer; the latency median is the lower median for even counts.
    """
    buyer, seller = inputs.buyer, inputs.seller
    completed = seller.finalized_count + buyer.finalized_count
    # Earned ratings only: strip the warm-start seed from each role.
    rated = (seller.rating_count - SEED_RATING_COUNT) + (buyer.rating_count - SEED_RATING_COUNT)
    suppressed = rated < MIN_RATED_DEALS
    capabilities = sorted(
        category
        for category, sales in inputs.sales_by_category.items()
        if sales >= VERIFIED_CAPABILITY_MIN_SALES
    )

    card: dict[str, Any] = {
        "completed_deals": completed,
        "rated_deals": rated,
        "distinct_counterparties": inputs.distinct_counterparties,
        "disputes": inputs.disputes,
        "verified_capabilities": len(capabilities),
        "verified_capability_list": capabilities,
        "tenure_days": (
            0 if inputs.created_at is None else _whole_days(inputs.created_at, inputs.now)
        ),
        "score_distribution": list(inputs.score_counts),
        "rates_suppressed": suppressed,
        "min_rated_deals": MIN_RATED_DEALS,
        "evidence_backed": True,
    }

    if completed > 0:
        # Coverage is never suppressed: it tells readers how thin the rated sample is.
        card["rating_coverage_bp"] = _ratio_half_up(rated, completed, 10_000)
        card["dispute_rate_bp"] = _ratio_half_up(inputs.disputes, completed, 10_000)
    if not suppressed:
        earned_sum = seller.rating_sum + buyer.rating_sum - 2 * SEED_RATING_SUM
        non_delivery = seller.non_delivery_count + buyer.non_delivery_count
        card["average_rating_hundredths"] = _ratio_half_up(earned_sum, rated, 100)
        card["delivery_rate_bp"] = _ratio_half_up(rated - non_delivery, rated, 10_000)
    if inputs.first_deal_at is not None:
        card["trading_days"] = _whole_days(inputs.first_deal_at, inputs.now)
    if inputs.last_active_at is not None:
        card["days_since_last_activity"] = _whole_days(inputs.last_active_at, inputs.now)
    median = _median_latency(inputs.latency_counts)
    if median is not None:
        card["median_rating_latency"] = median
    return card
