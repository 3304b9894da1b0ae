from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agent_broker.categories import CATEGORIES
from agent_broker.http.responses import Day, Handle, Timestamp, UriReference, omitted_when_unset
from agent_broker.reputation.scorecard import LATENCY_LABELS

LatencyBucket = Literal[LATENCY_LABELS]


class PublicReputationFacet(BaseModel):
    rating_sum: int
    rating_count: int
    finalized_count: int = Field(description="Deals sealed in this role; never seeded")
    non_delivery_count: int
    warm_start: bool = Field(
        description="True when the facet is only the seeded rating (rating_count 1, no deal)"
    )


class ReputationScorecard(BaseModel):
    """Derived from the facets and the deal history; optional fields are absent, never zero,
    when their rule does not define them."""

    completed_deals: int
    rated_deals: int
    distinct_counterparties: int
    disputes: int = Field(description="Claims filed against the account; not adjudicated")
    verified_capabilities: int
    verified_capability_list: list[Literal[CATEGORIES]] = Field(description="Sorted")
    dispute_rate_bp: int | None = omitted_when_unset(description="Absent when no deal has sealed")
    average_rating_hundredths: int | None = omitted_when_unset(
        description="Absent when rates_suppressed"
    )
    delivery_rate_bp: int | None = omitted_when_unset(description="Absent when rates_suppressed")
    rating_coverage_bp: int | None = omitted_when_unset(
        description="Absent when no deal has sealed"
    )
    tenure_days: int = Field(description="Whole days since creation; 0 means unknown")
    median_rating_latency: LatencyBucket | None = omitted_when_unset(
        description="Bucket of the median reveal-to-rating gap; absent when none recorded"
    )
    trading_days: int | None = omitted_when_unset(
        description="Days since the first sealed deal; absent when none (0 = today)"
    )
    days_since_last_activity: int | None = omitted_when_unset(
        description="Whole days since the last billable action; absent when none"
    )
    score_distribution: list[int] = Field(min_length=5, max_length=5)
    rates_suppressed: bool
    min_rated_deals: int
    evidence_backed: Literal[True]


class EscrowRecord(BaseModel):
    """Escrow deals settled as seller (deals that count, as for the facets)."""

    released: int = Field(description="Paid out to the seller: accepted, ruled or by deadline")
    refunded: int = Field(description="Given back to the buyer: ruled or undelivered")
    split: int = Field(description="Divided by a ruling")
    delivered_on_time: int = Field(description="Delivered before the delivery deadline")


class CounterpartyReputation(BaseModel):
    seller: PublicReputationFacet
    buyer: PublicReputationFacet
    escrow: EscrowRecord
    funded: bool
    domain_verified: bool
    scorecard: ReputationScorecard
    certified: bool | None = omitted_when_unset(
        description="Present only when true: the certification badge (liveness checks)"
    )
    certified_checked_on: Day | None = omitted_when_unset(
        description="Present only when certified: the date of the daily badge update"
    )


class PublicReputation(CounterpartyReputation):
    handle: Handle
    as_of: Timestamp = Field(description="When the record was read")


class AttestationChallenge(BaseModel):
    """Optional body of POST /v1/account/reputation/attestation: both keys for a proof,
    neither for a plain statement; at most 1 KiB."""

    nonce: str = Field(
        pattern="^[0-9a-f]{32}$",
        description="The relying party's single-use nonce: 32 lowercase hex characters",
    )
    audience: str = Field(
        description=(
            "The https origin the proof is presented to (no userinfo, path, query or "
            "fragment; ports 1-65535); signed in canonical form: lowercase, xn-- host, "
            "port 443 dropped, no trailing slash"
        ),
        examples=["https://relying-party.example"],
    )


class ReputationAttestation(BaseModel):
    attestation: str = Field(
        description=(
            "PASETO v4.public token: typ svc.reputation.v1 (statement, 24 hours) or "
            "svc.reputation-proof.v1 (proof with nonce and aud, 5 minutes)"
        )
    )
    handle: Handle = Field(description="Always the caller's own handle")
    expires_at: Timestamp = Field(description="When the token expires")
    verify_with: UriReference = Field(description="Location of the verification keys document")
