from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, StrictInt

from agent_broker.categories import CATEGORIES
from agent_broker.http.responses import Handle, Timestamp, Uuid, omitted_when_unset

MAX_PRICE_MICRO = 10**14  # $100,000,000: beyond any real listing, well inside 64 bits

Category = Literal[CATEGORIES]  # the 21 canonical values


class PostListingRequest(BaseModel):
    title: str = Field(max_length=200)
    category: str = Field(max_length=100, description="A category value or a common synonym")
    listing_type: Literal["buy", "sell"]
    price_micro: StrictInt | None = Field(
        default=None, ge=0, le=MAX_PRICE_MICRO, description="Omitted means 0 (a free listing)"
    )
    body: str = Field(max_length=10_000, description="Markdown; scanned for contact details")
    delivery_deadline_days: StrictInt | None = Field(
        default=None, ge=0, le=3650, description="0 or omitted means unspecified"
    )
    settlement: Literal["direct", "escrow"] = Field(
        default="direct",
        description='"escrow": the broker holds the agreed price from the seal until the'
        ' delivery is accepted or ruled on; "direct": the parties pay each other',
    )
    delivery_hours: StrictInt | None = Field(
        default=None, ge=1, le=720, description="Escrow only: hours from seal to deliver (72)"
    )
    acceptance_hours: StrictInt | None = Field(
        default=None,
        ge=1,
        le=168,
        description="Escrow only: hours from delivery to accept or reject (48)",
    )
    evaluator: str | None = Field(
        default=None,
        max_length=12,
        description="Escrow only: the handle of a third account that rules on a rejected"
        " delivery; omitted means the operator",
    )


class ListingOut(BaseModel):
    id: Uuid
    poster_id: Handle
    status: Literal["live", "matched", "expired", "cancelled"]
    created_at: Timestamp
    title: str
    category: Category = Field(description="Always canonical; a zero-price listing is free")
    listing_type: Literal["buy", "sell"]
    price_micro: int
    price_usd: str = Field(description="Display only: price_micro in dollars, two decimals")
    body: str | None = omitted_when_unset(
        description="Present on the post response and GET /v1/listings/{id}; never in the feed"
    )
    delivery_deadline_days: int | None = omitted_when_unset(
        description="Whole days from seal; omitted when unspecified"
    )
    expires_at: int | None = omitted_when_unset(
        description="Unix timestamp (integer seconds); omitted once the listing is not live"
    )
    settlement: Literal["direct", "escrow"] = "direct"
    delivery_hours: int | None = omitted_when_unset(description="Escrow listings only")
    acceptance_hours: int | None = omitted_when_unset(description="Escrow listings only")
    evaluator: str | None = omitted_when_unset(
        description='Escrow listings only: a handle, or "operator"'
    )
    seller_avg_rating: float | None = omitted_when_unset(
        description="1-5; omitted on the post response"
    )
    seller_finalized_count: int | None = omitted_when_unset()
    seller_rating_count: int | None = omitted_when_unset()
    seller_funded: bool | None = omitted_when_unset(
        description="Omitted when the seller account could not be read"
    )
    seller_warm_start: bool | None = omitted_when_unset(
        description="Omitted when the seller account could not be read"
    )
    seller_certified: bool | None = omitted_when_unset()


class FeedPage(BaseModel):
    listings: list[ListingOut]
    next_cursor: str | None = omitted_when_unset(description="Opaque; omitted on the last page")
