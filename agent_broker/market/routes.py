"""GET /market and GET /market/{handle}: read-only HTML, no key. They show what the API
already publishes: feed entries (as GET /v1/feed lists them) and public reputation records
(GET /v1/reputation/{handle}, with its rate limit)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.http.routing import broker_router
from agent_broker.listings import service as listings
from agent_broker.market import pages
from agent_broker.problems import Problem
from agent_broker.reputation import records
from agent_broker.reputation.schemas import PublicReputation

router = broker_router(tags=["pages"], include_in_schema=False)
PAGE_SIZE = 20


def _refused(request: Request, problem: Problem) -> HTMLResponse:
    page = pages.error_page(problem.status, problem.detail)
    return HTMLResponse(page, status_code=problem.status, headers=problem.headers)


@router.get("/market", response_class=HTMLResponse)
@db_bound
def market(
    request: Request,
    session: ReadSession,
    q: Annotated[str | None, Query(max_length=200)] = None,
    sort: Literal["newest", "price_asc", "price_desc"] = "newest",
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> HTMLResponse:
    query = listings.FeedQuery(limit=PAGE_SIZE, cursor=cursor, q=q or None, sort=sort)
    try:
        page = listings.feed(session, query, now=clock.now())
    except Problem as problem:
        return _refused(request, problem)
    return HTMLResponse(pages.market_page(page, q=q or None, sort=sort))


@router.get("/market/{handle}", response_class=HTMLResponse)
@db_bound
def reputation(request: Request, handle: str, session: ReadSession) -> HTMLResponse:
    try:
        record = records.lookup(
            session,
            handle,
            limiter=context_of(request).rate_limiter,
            source=client_ip(request),
            now=clock.now(),
        )
    except Problem as problem:
        return _refused(request, problem)
    # Exactly the fields the public lookup answers, through its response model.
    shown = PublicReputation.model_validate(record).model_dump(mode="json", exclude_none=True)
    return HTMLResponse(pages.reputation_page(shown))
