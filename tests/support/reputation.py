"""What a reputation record shows."""

from __future__ import annotations

# The scorecard fields present whatever the history (a new account's record shows these).
ALWAYS = {
    "completed_deals",
    "rated_deals",
    "distinct_counterparties",
    "disputes",
    "verified_capabilities",
    "verified_capability_list",
    "tenure_days",
    "score_distribution",
    "rates_suppressed",
    "min_rated_deals",
    "evidence_backed",
}
