from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request, Response

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.context import context_of
from agent_broker.http.idempotency import RequiredIdempotency, answer
from agent_broker.http.policy import authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.http.screening import Screens
from agent_broker.listings import service
from agent_broker.listings.schemas import FeedPage, ListingOut, PostListingRequest

router = broker_router(prefix="/v1", tags=["listings"])

Poster = Annotated[Caller, authenticated(metered=True, writes=True)]
MeteredReader = Annotated[Caller, authenticated(metered=True)]
Reader = Annotated[Caller, authenticated()]
PageSize = Annotated[int, Query(ge=1, le=100)]
Cursor = Annotated[str | None, Query(max_length=512)]


@router.post(
    "/listings",
    status_code=201,
    response_model=ListingOut,
    response_model_exclude_none=True,
    responses=problems(400, 401, 402, 403, 409, 422, 429),
)
@db_bound
def post_listing(
    request: Request,
    response: Response,
    body: PostListingRequest,
    caller: Poster,
    session: WriteSession,
    idempotency: RequiredIdempotency,
    screens: Screens,
) -> dict:
    outcome = service.post_once(
        session,
        caller.account,
        body,
        idempotency,
        screen=screens.for_caller(caller),
        ttl=context_of(request).settings.listing_ttl,
        now=clock.now(),
    )
    return answer(response, outcome)


@router.get(
    "/feed",
    response_model=FeedPage,
    response_model_exclude_none=True,
    responses=problems(400, 401, 403),
)
@db_bound
def read_feed(
    caller: MeteredReader,
    session: ReadSession,
    limit: PageSize = service.DEFAULT_FEED_LIMIT,
    cursor: Cursor = None,
    category: Annotated[str | None, Query(max_length=100)] = None,
    listing_type: Annotated[Literal["buy", "sell"] | None, Query(alias="type")] = None,
    q: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="Words that must all appear in the title or body (case-insensitive)",
        ),
    ] = None,
    sort: Annotated[
        Literal["newest", "price_asc", "price_desc"],
        Query(description="newest first, or by price (newest first among equal prices)"),
    ] = "newest",
) -> dict:
    query = service.FeedQuery(
        limit=limit,
        cursor=cursor,
        category=category,
        listing_type=listing_type,
        q=q,
        sort=sort,
    )
    return service.feed(session, query, now=clock.now())


@router.get(
    "/listings/mine",
    response_model=FeedPage,
    response_model_exclude_none=True,
    responses=problems(400, 401, 403),
)
@db_bound
def my_listings(
    caller: Reader,
    session: ReadSession,
    limit: PageSize = service.DEFAULT_FEED_LIMIT,
    cursor: Cursor = None,
) -> dict:
    """The caller's own listings, newest first, whatever their status, bodies included."""
    return service.mine(session, caller.account_id, limit=limit, after=cursor, now=clock.now())


@router.get(
    "/listings/{listing_id}",
    response_model=ListingOut,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def read_listing(listing_id: str, caller: MeteredReader, session: ReadSession) -> dict:
    return service.read(session, listing_id, now=clock.now())
