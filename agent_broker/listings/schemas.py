from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, StrictInt

MAX_PRICE_MICRO = 10**14  # $100,000,000: beyond any real listing, well inside 64 bits


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


class ListingOut(BaseModel):
    id: str
    poster_id: str
    status: Literal["live", "matched", "expired", "cancelled"]
    created_at: str
    title: str
    category: str
    listing_type: Literal["buy", "sell"]
    price_micro: int
    price_usd: str
    body: str | None = None
    delivery_deadline_days: int | None = None
    expires_at: int | None = None
    seller_avg_rating: float | None = None
    seller_finalized_count: int | None = None
    seller_rating_count: int | None = None
    seller_funded: bool | None = None
    seller_warm_start: bool | None = None
    seller_certified: bool | None = None


class FeedPage(BaseModel):
    listings: list[ListingOut]
    next_cursor: str | None = None
