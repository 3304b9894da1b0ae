"""Unit tests for the pure scorecard derivation (docs/interface.md §12.3)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_broker.reputation.scorecard import (
    LATENCY_LABELS,
    Facet,
    ScorecardInputs,
    derive_scorecard,
    latency_bucket_index,
)
from tests.support.reputation import ALWAYS

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)
SEED = Facet(rating_sum=5, rating_count=1, finalized_count=0, non_delivery_count=0)


def histogram(gaps: list[timedelta]) -> tuple[int, ...]:
    """Reveal->rating gaps as the per-bucket counts the service keeps."""
    counts = [0] * len(LATENCY_LABELS)
    for gap in gaps:
        counts[latency_bucket_index(gap)] += 1
    return tuple(counts)


def inputs(**overrides: Any) -> ScorecardInputs:
    if "rating_latencies" in overrides:
        overrides["latency_counts"] = histogram(overrides.pop("rating_latencies"))
    base = ScorecardInputs(
        buyer=SEED,
        seller=SEED,
        disputes=0,
        distinct_counterparties=0,
        sales_by_category={},
        created_at=None,
        first_deal_at=None,
        last_active_at=None,
        latency_counts=(0, 0, 0, 0, 0),
        score_counts=(0, 0, 0, 0, 0),
        now=NOW,
    )
    return replace(base, **overrides)


def facet(earned: list[int], finalized: int, non_delivery: int = 0) -> Facet:
    """A seeded facet plus the given earned ratings."""
    return Facet(
        rating_sum=5 + sum(earned),
        rating_count=1 + len(earned),
        finalized_count=finalized,
        non_delivery_count=non_delivery,
    )


def card(**overrides: Any) -> dict[str, Any]:
    return derive_scorecard(inputs(**overrides))


# --- zero history ---------------------------------------------------------------------------


def test_zero_history_emits_only_always_fields():
    result = card()
    assert result == {
        "completed_deals": 0,
        "rated_deals": 0,
        "distinct_counterparties": 0,
        "disputes": 0,
        "verified_capabilities": 0,
        "verified_capability_list": [],
        "tenure_days": 0,
        "score_distribution": [0, 0, 0, 0, 0],
        "rates_suppressed": True,
        "min_rated_deals": 5,
        "evidence_backed": True,
    }
    assert set(result) == ALWAYS


def test_zero_history_with_known_creation_still_only_always_fields():
    result = card(created_at=NOW - timedelta(days=10))
    assert set(result) == ALWAYS
    assert result["tenure_days"] == 10


# --- counts -----------------------------------------------------------------------------------


def test_completed_and_rated_deals_sum_both_roles_minus_seed():
    result = card(seller=facet([5, 4], finalized=3), buyer=facet([3], finalized=2))
    assert result["completed_deals"] == 5
    assert result["rated_deals"] == 3


def test_pass_through_counters():
    result = card(disputes=2, distinct_counterparties=7, seller=facet([], finalized=4))
    assert result["disputes"] == 2
    assert result["distinct_counterparties"] == 7


def test_score_distribution_pass_through_is_a_list():
    result = card(score_counts=(1, 0, 2, 3, 9))
    assert result["score_distribution"] == [1, 0, 2, 3, 9]
    assert isinstance(result["score_distribution"], list)


# --- suppression boundary -------------------------------------------------------------------


def test_four_rated_deals_is_suppressed():
    result = card(seller=facet([5, 5, 4], finalized=6), buyer=facet([5], finalized=2))
    assert result["rated_deals"] == 4
    assert result["rates_suppressed"] is True
    assert "average_rating_hundredths" not in result
    assert "delivery_rate_bp" not in result
    assert result["rating_coverage_bp"] == 5000  # 4 of 8, never suppressed
    assert result["min_rated_deals"] == 5


def test_five_rated_deals_is_not_suppressed():
    result = card(
        seller=facet([5, 5, 4], finalized=6, non_delivery=1), buyer=facet([5, 3], finalized=2)
    )
    assert result["rated_deals"] == 5
    assert result["rates_suppressed"] is False
    assert result["average_rating_hundredths"] == 440  # 22 / 5
    assert result["delivery_rate_bp"] == 8000  # 4 of 5
    assert result["rating_coverage_bp"] == 6250  # 5 of 8


def test_suppressed_fields_absent_not_zero():
    result = card(seller=facet([1], finalized=1, non_delivery=1))
    assert "average_rating_hundredths" not in result
    assert "delivery_rate_bp" not in result
    assert result["rating_coverage_bp"] == 10000


# --- rounding (half-up, integer) ------------------------------------------------------------


def test_coverage_two_of_three_rounds_up():
    result = card(seller=facet([5, 5], finalized=3))
    assert result["rating_coverage_bp"] == 6667


def test_coverage_one_of_three_rounds_down():
    result = card(seller=facet([5], finalized=3))
    assert result["rating_coverage_bp"] == 3333


def test_dispute_rate_rounding():
    assert card(disputes=2, seller=facet([], finalized=3))["dispute_rate_bp"] == 6667
    assert card(disputes=1, seller=facet([], finalized=3))["dispute_rate_bp"] == 3333
    assert card(disputes=0, seller=facet([], finalized=3))["dispute_rate_bp"] == 0


def test_average_exact_half_rounds_up():
    # 40 earned ratings summing to 197 -> 4.925 stars -> 493 hundredths.
    earned = [5] * 37 + [4] * 2 + [4]  # 185 + 12 = 197
    assert sum(earned) == 197 and len(earned) == 40
    result = card(seller=facet(earned, finalized=40))
    assert result["average_rating_hundredths"] == 493


def test_average_exact_and_non_half_cases():
    # Six ratings summing to 27 -> exactly 4.5 stars = 450.
    assert card(seller=facet([5, 5, 5, 4, 4, 4], finalized=6))["average_rating_hundredths"] == 450
    # 28/6 = 4.667 -> 467 (up); 26/6 = 4.333 -> 433 (down); six ratings clear suppression.
    assert card(seller=facet([5, 5, 4] * 2, finalized=6))["average_rating_hundredths"] == 467
    assert card(seller=facet([5, 4, 4] * 2, finalized=6))["average_rating_hundredths"] == 433


def test_average_range_endpoints():
    assert card(seller=facet([1] * 5, finalized=5))["average_rating_hundredths"] == 100
    assert card(buyer=facet([5] * 5, finalized=5))["average_rating_hundredths"] == 500


def test_delivery_rate_half_up():
    # 2 non-deliveries out of 6 rated -> 6666.67 -> 6667; 1 of 6 -> 8333.3 -> 8333.
    assert card(seller=facet([3] * 6, finalized=6, non_delivery=2))["delivery_rate_bp"] == 6667
    assert card(seller=facet([3] * 6, finalized=6, non_delivery=1))["delivery_rate_bp"] == 8333
    # Non-delivery counts from both roles are summed.
    both = card(
        seller=facet([3] * 4, finalized=4, non_delivery=1),
        buyer=facet([3] * 4, finalized=4, non_delivery=1),
    )
    assert both["delivery_rate_bp"] == 7500


# --- deal-dependent fields ------------------------------------------------------------------


def test_dispute_rate_absent_with_zero_deals():
    result = card(disputes=3)
    assert "dispute_rate_bp" not in result
    assert "rating_coverage_bp" not in result
    assert result["disputes"] == 3


def test_coverage_and_dispute_rate_present_with_deals_but_no_ratings():
    result = card(buyer=facet([], finalized=1))
    assert result["rating_coverage_bp"] == 0
    assert result["dispute_rate_bp"] == 0
    assert result["rates_suppressed"] is True


# --- verified capabilities ------------------------------------------------------------------


def test_two_sales_is_not_verified_three_is():
    assert card(sales_by_category={"translation": 2})["verified_capability_list"] == []
    result = card(sales_by_category={"translation": 3})
    assert result["verified_capability_list"] == ["translation"]
    assert result["verified_capabilities"] == 1


def test_verified_capability_list_sorted_and_filtered():
    result = card(
        sales_by_category={"zeta": 5, "alpha": 3, "mid": 2, "beta": 10, "omega": 0},
    )
    assert result["verified_capability_list"] == ["alpha", "beta", "zeta"]
    assert result["verified_capabilities"] == 3


# --- day counts -----------------------------------------------------------------------------


def test_trading_days_zero_when_first_trade_today():
    result = card(first_deal_at=NOW - timedelta(hours=3), seller=facet([], finalized=1))
    assert result["trading_days"] == 0


def test_trading_days_absent_when_never_traded():
    assert "trading_days" not in card()


def test_trading_days_counts_whole_days():
    assert card(first_deal_at=NOW - timedelta(days=9, hours=23))["trading_days"] == 9


@pytest.mark.parametrize(
    ("age", "days"),
    [
        (timedelta(0), 0),
        (timedelta(hours=23, minutes=59), 0),
        (timedelta(hours=23, minutes=59, seconds=59, microseconds=999999), 0),
        (timedelta(hours=24), 1),
        (timedelta(days=1, hours=23, minutes=59), 1),
        (timedelta(days=365), 365),
    ],
)
def test_tenure_and_activity_whole_days(age: timedelta, days: int):
    result = card(created_at=NOW - age, last_active_at=NOW - age)
    assert result["tenure_days"] == days
    assert result["days_since_last_activity"] == days


def test_tenure_zero_when_unknown():
    assert card(created_at=None)["tenure_days"] == 0


def test_days_since_last_activity_absent_when_none():
    assert "days_since_last_activity" not in card(created_at=NOW - timedelta(days=3))


def test_future_timestamps_clamp_to_zero():
    future = NOW + timedelta(hours=30)
    result = card(created_at=future, first_deal_at=future, last_active_at=future)
    assert result["tenure_days"] == 0
    assert result["trading_days"] == 0
    assert result["days_since_last_activity"] == 0


# --- median rating latency ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gap", "label"),
    [
        (timedelta(0), "<1h"),
        (timedelta(minutes=59, seconds=59), "<1h"),
        (timedelta(hours=1), "1h-4h"),
        (timedelta(hours=3, minutes=59), "1h-4h"),
        (timedelta(hours=4), "4h-24h"),
        (timedelta(hours=23, minutes=59, seconds=59), "4h-24h"),
        (timedelta(hours=24), "1d-3d"),
        (timedelta(hours=71, minutes=59), "1d-3d"),
        (timedelta(hours=72), "3d-7d"),
        (timedelta(days=7), "3d-7d"),
    ],
)
def test_latency_bucket_boundaries(gap: timedelta, label: str):
    assert card(rating_latencies=[gap])["median_rating_latency"] == label


def test_latency_absent_when_none_recorded():
    assert "median_rating_latency" not in card(rating_latencies=[])


def test_latency_median_odd_count_uses_middle_after_sorting():
    gaps = [timedelta(days=5), timedelta(minutes=5), timedelta(hours=2)]
    assert card(rating_latencies=gaps)["median_rating_latency"] == "1h-4h"


def test_latency_median_even_count_uses_lower_median():
    gaps = [timedelta(days=4), timedelta(minutes=10), timedelta(hours=30), timedelta(hours=2)]
    # sorted: 10m, 2h, 30h, 4d -> lower median is 2h
    assert card(rating_latencies=gaps)["median_rating_latency"] == "1h-4h"
    two = [timedelta(hours=5), timedelta(minutes=1)]
    assert card(rating_latencies=two)["median_rating_latency"] == "<1h"


def test_latency_single_gap():
    assert card(rating_latencies=[timedelta(hours=50)])["median_rating_latency"] == "1d-3d"


# --- types ------------------------------------------------------------------------------------


def _walk(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _walk(item)]
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _walk(item)]
    return [value]


def test_no_float_anywhere_in_full_output():
    result = card(
        seller=facet([5, 4, 3, 5], finalized=7, non_delivery=1),
        buyer=facet([5, 2, 4], finalized=4),
        disputes=1,
        distinct_counterparties=6,
        sales_by_category={"a": 3, "b": 1},
        created_at=NOW - timedelta(days=40, hours=7),
        first_deal_at=NOW - timedelta(days=20, minutes=3),
        last_active_at=NOW - timedelta(hours=50),
        rating_latencies=[timedelta(hours=2, seconds=1), timedelta(minutes=30)],
        score_counts=(0, 1, 1, 2, 3),
    )
    # Every optional field is present here, so the walk covers the whole shape.
    assert set(result) == ALWAYS | {
        "average_rating_hundredths",
        "delivery_rate_bp",
        "rating_coverage_bp",
        "dispute_rate_bp",
        "trading_days",
        "days_since_last_activity",
        "median_rating_latency",
    }
    leaves = _walk(result)
    assert not any(isinstance(leaf, float) for leaf in leaves)
    assert all(isinstance(leaf, bool | int | str) for leaf in leaves)
    assert result["average_rating_hundredths"] == 400  # 28 / 7
    assert result["delivery_rate_bp"] == 8571  # 6 of 7 = 8571.43
    assert result["rating_coverage_bp"] == 6364  # 7 of 11 = 6363.64
    assert result["dispute_rate_bp"] == 909  # 1 of 11 = 909.09
    assert result["median_rating_latency"] == "<1h"
    assert result["tenure_days"] == 40
    assert result["trading_days"] == 20
    assert result["days_since_last_activity"] == 2


def test_integer_fields_are_not_bools():
    result = card(seller=facet([5] * 5, finalized=5))
    for key in ("completed_deals", "rated_deals", "average_rating_hundredths", "tenure_days"):
        assert type(result[key]) is int
