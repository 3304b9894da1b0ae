"""Listing rules: posting (fee, cap, scanning), reading, the feed and expiry."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session

from agent_broker import categories
from agent_broker.accounts import directory
from agent_broker.accounts.models import AccountRecord
from agent_broker.certification import badge as certification
from agent_broker.escrow.service import EscrowTerms
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import books
from agent_broker.ledger import service as ledger
from agent_broker.listings import cursor, repository
from agent_broker.listings.models import Listing
from agent_broker.listings.schemas import PostListingRequest
from agent_broker.listings.views import (
    ListingLike,
    PosterStanding,
    effective_status,
    listing_view,
    poster_role,
)
from agent_broker.pricing import POSTING_FEE_MICRO
from agent_broker.problems import InvalidInput, NotFound, Problem, Reason
from agent_broker.reputation import service as reputation
from agent_broker.scanning.brake import Screen
from agent_broker.scanning.normalize import is_blank

DEFAULT_DELIVERY_HOURS, DEFAULT_ACCEPTANCE_HOURS = 72, 48
UNFUNDED_LISTING_CAP = 3  # lifetime, until the account is funded with real money
DEFAULT_FEED_LIMIT = 20
MAX_TERMS = 16
_WORD = re.compile(r"\w+")


class ListingCapReached(Problem):
    status, reason = 409, Reason.listing_cap_reached
    default_detail = (
        f"An account not yet funded with real money may post {UNFUNDED_LISTING_CAP} listings in "
        "its lifetime; add credits to lift the cap. Nothing was charged."
    )


class ListingConflict(Problem):
    status, reason = 409, Reason.listing_conflict
    default_detail = "The listing changed while this request ran; read it again and retry."


@dataclass(frozen=True)
class FeedQuery:
    limit: int = DEFAULT_FEED_LIMIT
    cursor: str | None = None
    category: str | None = None
    listing_type: str | None = None
    q: str | None = None  # words all found in the title or body
    sort: str = "newest"  # or price_asc, price_desc


def post(
    session: Session,
    poster: AccountRecord,
    request: PostListingRequest,
    *,
    screen: Screen,
    ttl: timedelta,
    now: datetime,
) -> dict:
    title = request.title.strip()
    if is_blank(title):
        raise InvalidInput("title must not be empty (or only invisible characters).")
    price = request.price_micro or 0
    category = categories.for_listing(request.category, price)
    escrow = escrow_terms(session, poster, request)
    screen({"title": title, "body": request.body})

    account_id = poster.id
    funded = ledger.is_funded(session, account_id)
    if not funded and repository.count_posted(session, account_id) >= UNFUNDED_LISTING_CAP:
        raise ListingCapReached()
    listing_id = str(uuid.uuid4())
    # The fee's conditional update locks the wallet row, so the cap is counted again
    # below while no concurrent post of the same account can slip past it.
    ledger.charge(
        session,
        account_id,
        POSTING_FEE_MICRO,
        sink=books.FEES,
        kind="listing_fee",
        memo="listing posting fee",
        reference=listing_id,
        now=now,
    )
    reputation.touch(session, [account_id], now=now)
    if not funded:
        funded = ledger.is_funded(session, account_id)
        if not funded and repository.count_posted(session, account_id) >= UNFUNDED_LISTING_CAP:
            raise ListingCapReached()

    listing = repository.insert(
        session,
        id=listing_id,
        poster_id=account_id,
        poster_handle=poster.handle,
        status="live",
        listing_type=request.listing_type,
        category=category,
        title=title,
        body=request.body,
        price_micro=price,
        delivery_deadline_days=request.delivery_deadline_days or None,
        settlement=request.settlement,
        delivery_hours=escrow.delivery_hours if escrow else None,
        acceptance_hours=escrow.acceptance_hours if escrow else None,
        evaluator_id=escrow.evaluator_id if escrow else None,
        evaluator_handle=escrow.evaluator_handle if escrow else None,
        created_at=now,
        expires_at=now + ttl,
    )
    # Both lookups go with the listing's insert, in one round trip.
    facets = reputation.facets_later(session, account_id)
    certified = certification.certified_later(session, account_id, now=now)
    facet = facets().get(poster_role(listing))
    standing = _standing(facet, funded, certified()) if facet is not None else None
    return listing_view(listing, now=now, standing=standing, with_body=True, with_avg_rating=False)


def escrow_terms(
    session: Session, poster: AccountRecord, request: PostListingRequest
) -> EscrowTerms | None:
    """An escrow listing's terms, its defaults filled in; None for a direct listing, which
    takes none of them."""
    given = [
        name
        for name in ("delivery_hours", "acceptance_hours", "evaluator")
        if getattr(request, name) is not None
    ]
    if request.settlement == "direct":
        if given:
            raise InvalidInput(f'{", ".join(given)}: only for settlement "escrow".')
        return None
    evaluator_id = None
    if request.evaluator is not None:
        evaluator = directory.find_by_handle(session, request.evaluator)
        if evaluator is None:
            raise InvalidInput("evaluator: no account has this handle.")
        if evaluator.id == poster.id:
            raise InvalidInput("evaluator: a third account, not the listing's poster.")
        evaluator_id = evaluator.id
    return EscrowTerms(
        delivery_hours=request.delivery_hours or DEFAULT_DELIVERY_HOURS,
        acceptance_hours=request.acceptance_hours or DEFAULT_ACCEPTANCE_HOURS,
        evaluator_id=evaluator_id,
        evaluator_handle=request.evaluator if evaluator_id else None,
    )


def terms_of(listing: ListingLike) -> EscrowTerms | None:
    """The escrow terms a listing fixes for its deals; None for a direct listing."""
    if listing.settlement != "escrow":
        return None
    return EscrowTerms(
        delivery_hours=listing.delivery_hours or DEFAULT_DELIVERY_HOURS,
        acceptance_hours=listing.acceptance_hours or DEFAULT_ACCEPTANCE_HOURS,
        evaluator_id=listing.evaluator_id,
        evaluator_handle=listing.evaluator_handle,
    )


def post_once(
    session: Session,
    poster: AccountRecord,
    request: PostListingRequest,
    key: IdempotencyKey,
    *,
    screen: Screen,
    ttl: timedelta,
    now: datetime,
) -> Outcome:
    def create() -> Outcome:
        listing = post(session, poster, request, screen=screen, ttl=ttl, now=now)
        return Outcome(201, listing)

    return run_once(session, poster.id, key, create, now=now)


def get(session: Session, listing_id: str) -> Listing:
    listing = session.get(Listing, listing_id)
    if listing is None:
        raise NotFound("No such listing.")
    return listing


def lock(session: Session, listing_id: str) -> ListingLike:
    """The listing's row, read and row-locked until the transaction ends: what serialises
    opening threads and sealing deals on one listing (the first lock either takes)."""
    listing = repository.lock(session, listing_id)
    if listing is None:
        raise NotFound("No such listing.")
    return listing


def is_live(listing: ListingLike, now: datetime) -> bool:
    return effective_status(listing, now) == "live"


def mark_matched(session: Session, listing_id: str) -> None:
    """A deal sealed on the listing: it leaves the feed for good. The caller holds the
    listing's lock and saw it live, so anything but one row moved is a conflict."""
    if not repository.match_if_live(session, listing_id):
        raise ListingConflict()


def read(session: Session, listing_id: str, *, now: datetime) -> dict:
    listing = get(session, listing_id)
    standing = _standings(session, [listing], now=now).get(listing.id)
    return listing_view(listing, now=now, standing=standing, with_body=True)


def search_terms(q: str) -> list[str]:
    """The words of a query, lower-cased; punctuation and operators are not syntax here."""
    terms = [word.lower() for word in _WORD.findall(q)][:MAX_TERMS]
    if not terms:
        raise InvalidInput("q has no words to search for.")
    return terms


def feed(session: Session, query: FeedQuery, *, now: datetime) -> dict:
    category = None
    if query.category is not None:
        category = categories.resolve_or_refuse(query.category)
    terms = search_terms(query.q) if query.q is not None else None
    after = cursor.decode_position(query.cursor, query.sort) if query.cursor else None
    rows = repository.live_page(
        session,
        now=now,
        page_rows=query.limit + 1,
        sort=query.sort,
        category=category,
        listing_type=query.listing_type,
        terms=terms,
        after=(after.created_at, after.listing_id) if after else None,
        after_price=after.price_micro if after else None,
    )
    return _page(session, rows, query.limit, with_body=False, now=now, sort=query.sort)


def _page(
    session: Session,
    rows: list,
    limit: int,
    *,
    with_body: bool,
    now: datetime,
    sort: str = cursor.NEWEST,
) -> dict:
    """A page of listings from up to limit + 1 rows; the extra row only says there is more."""
    page = rows[:limit]
    standings = _standings(session, page, now=now)
    result: dict = {
        "listings": [
            listing_view(row, now=now, standing=standings.get(row.id), with_body=with_body)
            for row in page
        ]
    }
    if len(rows) > limit:
        last = page[-1]
        price = None if sort == cursor.NEWEST else last.price_micro
        result["next_cursor"] = cursor.encode_position(
            cursor.Position(last.created_at, last.id, sort, price)
        )
    return result


def mine(
    session: Session, account_id: str, *, limit: int, after: str | None, now: datetime
) -> dict:
    """The caller's own listings, newest first, whatever their status, with their bodies:
    a page shaped like the feed's."""
    position = cursor.decode(after) if after else None
    rows = repository.own_page(session, account_id, page_rows=limit + 1, after=position)
    return _page(session, rows, limit, with_body=True, now=now)


def _standings(
    session: Session, listings: Iterable[ListingLike], *, now: datetime
) -> dict[str, PosterStanding]:
    """Each listing's poster standing, read in three queries for the whole page. A poster
    whose record cannot be read gets none, and the seller fields are then omitted."""
    listings = list(listings)
    posters = {row.poster_id for row in listings}
    facets = reputation.facets_for(session, posters)
    funded = ledger.funded_accounts(session, posters)
    certified = certification.certified_accounts(session, posters, now=now)
    standings = {}
    # One standing per poster and role: a page often holds many listings of one poster.
    known: dict[tuple[str, str], PosterStanding | None] = {}
    for row in listings:
        key = (row.poster_id, poster_role(row))
        if key not in known:
            facet = facets.get(row.poster_id, {}).get(key[1])
            known[key] = (
                None
                if facet is None
                else _standing(facet, row.poster_id in funded, row.poster_id in certified)
            )
        if (standing := known[key]) is not None:
            standings[row.id] = standing
    return standings


def _standing(facet: dict[str, int], funded: bool, certified: bool) -> PosterStanding:
    return PosterStanding(
        rating_sum=facet["rating_sum"],
        rating_count=facet["rating_count"],
        finalized_count=facet["finalized_count"],
        funded=funded,
        certified=certified,
    )


def expire_due(session: Session, *, now: datetime) -> int:
    """Mark live listings past their expiry as expired (the job; reads agree lazily)."""
    result = session.execute(
        update(Listing)
        .where(Listing.status == "live", Listing.expires_at <= now)
        .values(status="expired")
    )
    return result.rowcount or 0
