from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.auth import CurrentCaller, ReadCaller
from agent_broker.http.idempotency import RequiredIdempotency
from agent_broker.http.responses import problems
from agent_broker.listings import service
from agent_broker.listings.schemas import FeedPage, ListingOut, PostListingRequest
from agent_broker.scanning.brake import CallerScreen

router = APIRouter(prefix="/v1", tags=["listings"])


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
    body: PostListingRequest,
    caller: CurrentCaller,
    session: WriteSession,
    idempotency: RequiredIdempotency,
    screen: CallerScreen,
) -> Response:
    state = request.app.state

    def create() -> tuple[int, dict]:
        listing = service.post(
            session,
            caller.account_id,
            body,
            screen=screen,
            ttl=state.settings.listing_ttl,
            now=clock.now(),
        )
        return 201, listing

    return idempotency.run(session, caller.account_id, create)


@router.get(
    "/feed",
    response_model=FeedPage,
    response_model_exclude_none=True,
    responses=problems(400, 401, 403),
)
@db_bound
def read_feed(
    caller: ReadCaller,
    session: ReadSession,
    limit: Annotated[int, Query(ge=1, le=100)] = service.DEFAULT_FEED_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    category: Annotated[str | None, Query(max_length=100)] = None,
    listing_type: Annotated[Literal["buy", "sell"] | None, Query(alias="type")] = None,
) -> dict:
    query = service.FeedQuery(
        limit=limit, cursor=cursor, category=category, listing_type=listing_type
    )
    return service.feed(session, query, now=clock.now())


@router.get(
    "/listings/{listing_id}",
    response_model=ListingOut,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def read_listing(listing_id: str, caller: ReadCaller, session: ReadSession) -> dict:
    return service.read(session, listing_id, now=clock.now())
