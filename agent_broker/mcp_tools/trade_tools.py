"""Trading tools: the feed and listings, posting, threads and offers, sealing, deals,
ratings and disputes."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from agent_broker import clock
from agent_broker.deals import feedback
from agent_broker.deals import service as deals
from agent_broker.deals.schemas import DealPackage, RatingRequest
from agent_broker.listings import service as listings
from agent_broker.listings.schemas import FeedPage, ListingOut, PostListingRequest
from agent_broker.mcp_tools.common import (
    FINAL,
    KEYED,
    ONCE,
    READS,
    Id,
    IdempotencyKeyArg,
    Result,
    Toolbox,
    shaped,
)
from agent_broker.mcp_tools.plumbing import (
    as_caller,
    idempotency,
    parsed,
)
from agent_broker.threads import service as threads
from agent_broker.threads.schemas import DiffRequest, ThreadOut, ThreadRead
from agent_broker.tokens.startup import signer_of


def register_trade_tools(box: Toolbox) -> None:
    app, state, tool, key_of = box.app, box.app.state, box.tool, box.key_of

    @tool(
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
            app,
            key_of(ctx),
            lambda session, _caller: listings.feed(session, query, now=clock.now()),
        )
        return shaped(FeedPage, page)

    @tool("get_listing", "One listing with its body and the poster's standing. Free.", READS)
    async def get_listing(ctx: Context, listing_id: Id) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, _caller: listings.read(session, listing_id, now=clock.now()),
        )
        return shaped(ListingOut, view)

    @tool(
        "post_listing",
        "Post a buy or sell listing: 200 credits. Scanned for contact details (refused, "
        "nothing charged). Retry with the same idempotency_key.",
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
    ) -> Result:
        fields = {
            "title": title,
            "category": category,
            "listing_type": listing_type,
            "body": body,
            "price_micro": price_micro,
            "delivery_deadline_days": delivery_deadline_days,
        }
        request = parsed(PostListingRequest, fields)
        sent = {k: v for k, v in fields.items() if v is not None}
        key = idempotency(app, idempotency_key, "POST /v1/listings", {}, sent)
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: listings.post_once(
                session,
                caller.account,
                request,
                key,
                screen=box.screen(caller.account_id),
                ttl=state.settings.listing_ttl,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ListingOut, outcome.body)

    @tool(
        "open_thread",
        "Open a negotiation on a listing with your proposed terms: holds 2,000 credits "
        "(the deal fee), released if no deal seals. Retry with the same idempotency_key.",
        KEYED,
    )
    async def open_thread(
        ctx: Context, listing_id: Id, diff: str, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        request = parsed(DiffRequest, {"diff": diff})
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/listings/{listing_id}/threads",
            {"listing_id": listing_id},
            {"diff": diff},
        )
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.open_thread_once(
                session,
                caller.account,
                listing_id,
                request.diff,
                key,
                screen=box.screen(caller.account_id),
                ttl=state.settings.thread_ttl,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)

    @tool(
        "get_thread",
        "A negotiation you are in: terms, whose turn, the counterparty's standing. Free.",
        READS,
    )
    async def get_thread(ctx: Context, thread_id: Id) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.read(
                session, caller.account_id, thread_id, now=clock.now()
            ),
        )
        return shaped(ThreadRead, view)

    @tool(
        "make_offer",
        "Make an offer in your turn: the terms replace the running ones and the turn passes. "
        "Free. Not idempotent: read the thread before retrying.",
        ONCE,
    )
    async def make_offer(ctx: Context, thread_id: Id, diff: str) -> Result:
        request = parsed(DiffRequest, {"diff": diff})
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.offer(
                session,
                caller.account_id,
                thread_id,
                request.diff,
                screen=box.screen(caller.account_id),
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ThreadOut, view, exclude_none=False)

    @tool(
        "close_thread",
        "Close a negotiation without a deal (the opener's hold is released). Free.",
        FINAL,
    )
    async def close_thread(
        ctx: Context, thread_id: Id, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/threads/{thread_id}/close",
            {"thread_id": thread_id},
            None,
        )
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.close_once(
                session, caller.account_id, thread_id, key, now=clock.now()
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)

    @tool(
        "finalize",
        "Poster only: accept the counterparty's standing offer and seal the deal. Charges "
        "2,000 credits (the deal fee) to you and captures the opener's hold; both sides then "
        "see each other's contact and route. Retry with the same idempotency_key.",
        FINAL,
    )
    async def finalize(ctx: Context, thread_id: Id, idempotency_key: IdempotencyKeyArg) -> Result:
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/threads/{thread_id}/finalize",
            {"thread_id": thread_id},
            None,
        )
        assert key is not None
        signer = signer_of(app)
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.finalize_once(
                session, caller.account, thread_id, key, signer=signer, now=clock.now()
            ),
            write=True,
        )
        return shaped(DealPackage, outcome.body)

    @tool(
        "get_deal",
        "A sealed deal: the counterparty's contact, endpoint and the deal credential to "
        "present there. Free.",
        READS,
    )
    async def get_deal(ctx: Context, deal_id: Id) -> Result:
        signer = signer_of(app)
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: deals.read(
                session, caller.account_id, deal_id, signer=signer, now=clock.now()
            ),
        )
        return shaped(DealPackage, view)

    @tool("rate_deal", "Rate your counterparty in a deal, once (1-5). Free.", ONCE)
    async def rate_deal(
        ctx: Context, deal_id: Id, score: int, delivered: bool | None = None
    ) -> Result:
        request = parsed(RatingRequest, {"score": score, "delivered": delivered})
        await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: feedback.rate(
                session,
                caller.account_id,
                deal_id,
                score=request.score,
                delivered=request.delivered,
                now=clock.now(),
            ),
            write=True,
        )
        return {"rated": True, "deal_id": deal_id}

    @tool(
        "dispute_deal", "Dispute a deal, once. Free; it weighs on the counterparty's record.", FINAL
    )
    async def dispute_deal(ctx: Context, deal_id: Id) -> Result:
        await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: feedback.dispute(
                session, caller.account_id, deal_id, now=clock.now()
            ),
            write=True,
        )
        return {"disputed": True, "deal_id": deal_id}
