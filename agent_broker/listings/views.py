"""How a listing is shown: the listing of docs/interface.md §9.1."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agent_broker import clock
from agent_broker.pricing import usd


@dataclass(frozen=True)
class PosterStanding:
    """The poster's reputation in the role the listing puts them in."""

    rating_sum: int
    rating_count: int
    finalized_count: int
    funded: bool
    certified: bool = False


class ListingLike(Protocol):
    """A listing entity or a feed row: anything with the listing's column attributes."""

    id: str
    poster_id: str
    poster_handle: str
    status: str
    listing_type: str
    category: str
    title: str
    price_micro: int
    delivery_deadline_days: int | None
    settlement: str
    delivery_hours: int | None
    acceptance_hours: int | None
    evaluator_id: str | None
    evaluator_handle: str | None
    created_at: datetime
    expires_at: datetime


def effective_status(listing: ListingLike, now: datetime) -> str:
    # A live listing past its expiry is expired even before the job has marked it.
    if listing.status == "live" and listing.expires_at <= now:
        return "expired"
    return listing.status


def poster_role(listing: ListingLike) -> str:
    return "seller" if listing.listing_type == "sell" else "buyer"


def listing_view(
    listing: ListingLike,
    *,
    now: datetime,
    standing: PosterStanding | None,
    with_body: bool,
    with_avg_rating: bool = True,
) -> dict:
    status = effective_status(listing, now)
    view: dict = {
        "id": listing.id,
        "poster_id": listing.poster_handle,
        "status": status,
        "created_at": clock.rfc3339(listing.created_at),
        "title": listing.title,
        "category": listing.category,
        "listing_type": listing.listing_type,
        "price_micro": listing.price_micro,
        "price_usd": usd(listing.price_micro),
    }
    if with_body:
        view["body"] = listing.body  # type: ignore[attr-defined]
    if listing.delivery_deadline_days:
        view["delivery_deadline_days"] = listing.delivery_deadline_days
    view["settlement"] = listing.settlement
    if listing.settlement == "escrow":
        view["delivery_hours"] = listing.delivery_hours
        view["acceptance_hours"] = listing.acceptance_hours
        view["evaluator"] = listing.evaluator_handle or "operator"
    if status == "live":
        view["expires_at"] = int(listing.expires_at.timestamp())
    if standing is not None:
        if with_avg_rating:
            view["seller_avg_rating"] = round(standing.rating_sum / standing.rating_count, 2)
        view["seller_finalized_count"] = standing.finalized_count
        view["seller_rating_count"] = standing.rating_count
        view["seller_funded"] = standing.funded
        view["seller_warm_start"] = standing.rating_count == 1 and standing.finalized_count == 0
        if standing.certified:  # as on the reputation record: present only when true
            view["seller_certified"] = True
    return view
