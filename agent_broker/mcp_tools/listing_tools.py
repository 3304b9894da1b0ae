"""Listing tools: the feed, one listing, posting. One function per tool, each registering
it on the toolbox (the order is trade_tools.TRADE_TOOLS)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from agent_broker import clock
from agent_broker.listings import service as listings
from agent_broker.listings.schemas import FeedPage, ListingOut, PostListingRequest
from agent_broker.mcp_tools.common import (
    KEYED,
    READS,
    Id,
    IdempotencyKeyArg,
    Result,
    Toolbox,
    shaped,
)
from agent_broker.mcp_tools.plumbing import as_caller, idempotency, parsed


def add_read_feed(box: Toolbox) -> None:
    @box.tool(
        "read_feed",
        "Live listings, newest first, 20 a page by default (cursor for the next). Free with a key.",
        READS,
    )
    async def read_feed(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100)] = listings.DEFAULT_FEED_LIMIT,
        cursor: Annotated[str | None, Field(max_length=512)] = None,
        category: Annotated[str | None, Field(max_length=100)] = None,
        listing_type: Literal["buy", "sell"] | None = None,
        q: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="Words all in title or body"),
        ] = None,
        sort: Literal["newest", "price_asc", "price_desc"] = "newest",
    ) -> Result:
        query = listings.FeedQuery(
            limit=limit,
            cursor=cursor,
            category=category,
            listing_type=listing_type,
            q=q,
            sort=sort,
        )
        page = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, _caller: listings.feed(session, query, now=clock.now()),
        )
        return shaped(FeedPage, page)


def add_get_listing(box: Toolbox) -> None:
    @box.tool("get_listing", "One listing with its body and the poster's standing. Free.", READS)
    async def get_listing(ctx: Context, listing_id: Id) -> Result:
        view = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, _caller: listings.read(session, listing_id, now=clock.now()),
        )
        return shaped(ListingOut, view)


def add_post_listing(box: Toolbox) -> None:
    @box.tool(
        "post_listing",
        "Post a buy or sell listing: 200 credits. Scanned for contact details (refused, "
        'nothing charged). settlement "escrow" has the broker hold the price from the seal '
        "until delivery is accepted or ruled on (delivery_hours, acceptance_hours, evaluator "
        "apply to escrow only). Retry with the same idempotency_key.",
        KEYED,
    )
    async def post_listing(
        ctx: Context,
        title: str,
        category: str,
        listing_type: Literal["buy", "sell"],
        body: str,
        idempotency_key: IdempotencyKeyArg,
        price_micro: int | None = None,
        delivery_deadline_days: int | None = None,
        settlement: Literal["direct", "escrow"] | None = None,
        delivery_hours: int | None = None,
        acceptance_hours: int | None = None,
        evaluator: Annotated[
            str | None,
            Field(max_length=12, description="Escrow only: a third account's handle"),
        ] = None,
    ) -> Result:
        fields = {
            "title": title,
            "category": category,
            "listing_type": listing_type,
            "body": body,
            "price_micro": price_micro,
            "delivery_deadline_days": delivery_deadline_days,
            "settlement": settlement,
            "delivery_hours": delivery_hours,
            "acceptance_hours": acceptance_hours,
            "evaluator": evaluator,
        }
        request = parsed(PostListingRequest, fields)
        sent = {k: v for k, v in fields.items() if v is not None}
        key = idempotency(box.context, idempotency_key, "POST /v1/listings", {}, sent)
        assert key is not None
        outcome = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: listings.post_once(
                session,
                caller.account,
                request,
                key,
                screen=box.screen(caller.account_id),
                ttl=box.context.settings.listing_ttl,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ListingOut, outcome.body)
