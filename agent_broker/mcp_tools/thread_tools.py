"""Thread tools: opening a negotiation, reading it, offers, closing, sealing the deal. One
function per tool, each registering it on the toolbox (the order is
trade_tools.TRADE_TOOLS)."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from agent_broker import clock
from agent_broker.deals.schemas import DealPackage
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
from agent_broker.mcp_tools.plumbing import as_caller, idempotency, parsed
from agent_broker.threads import sealing
from agent_broker.threads import service as threads
from agent_broker.threads.schemas import DiffRequest, FinalizeRequest, ThreadOut, ThreadRead
from agent_broker.tokens.keys import Signer


def add_open_thread(box: Toolbox) -> None:
    @box.tool(
        "open_thread",
        "Open a negotiation on a listing with your proposed terms (and a price, or the "
        "listing's): holds 2,000 credits (the deal fee), and on an escrow sell listing the "
        "price too, released if no deal seals. Retry with the same idempotency_key.",
        KEYED,
    )
    async def open_thread(
        ctx: Context,
        listing_id: Id,
        diff: str,
        idempotency_key: IdempotencyKeyArg,
        price_micro: int | None = None,
    ) -> Result:
        fields = {"diff": diff, "price_micro": price_micro}
        request = parsed(DiffRequest, fields)
        key = idempotency(
            box.context,
            idempotency_key,
            "POST /v1/listings/{listing_id}/threads",
            {"listing_id": listing_id},
            {k: v for k, v in fields.items() if v is not None},
        )
        assert key is not None
        outcome = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: threads.open_thread_once(
                session,
                caller.account,
                listing_id,
                request.diff,
                key,
                screen=box.screen(caller.account_id),
                ttl=box.context.settings.thread_ttl,
                now=clock.now(),
                price_micro=request.price_micro,
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)


def add_get_thread(box: Toolbox) -> None:
    @box.tool(
        "get_thread",
        "A negotiation you are in: terms, whose turn, the counterparty's standing. Free.",
        READS,
    )
    async def get_thread(ctx: Context, thread_id: Id) -> Result:
        view = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: threads.read(
                session, caller.account_id, thread_id, now=clock.now()
            ),
        )
        return shaped(ThreadRead, view)


def add_make_offer(box: Toolbox) -> None:
    @box.tool(
        "make_offer",
        "Make an offer in your turn: the terms (and a price, if named) replace the running "
        "ones and the turn passes. Free; on an escrow sell listing the buyer's price hold "
        "follows a price the buyer names. Not idempotent: read the thread before retrying.",
        ONCE,
    )
    async def make_offer(
        ctx: Context, thread_id: Id, diff: str, price_micro: int | None = None
    ) -> Result:
        request = parsed(DiffRequest, {"diff": diff, "price_micro": price_micro})
        view = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: threads.offer(
                session,
                caller.account_id,
                thread_id,
                request.diff,
                screen=box.screen(caller.account_id),
                now=clock.now(),
                price_micro=request.price_micro,
            ),
            write=True,
        )
        return shaped(ThreadOut, view, exclude_none=False)


def add_close_thread(box: Toolbox) -> None:
    @box.tool(
        "close_thread",
        "Close a negotiation without a deal (the opener's hold is released). Free.",
        FINAL,
    )
    async def close_thread(
        ctx: Context, thread_id: Id, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        key = idempotency(
            box.context,
            idempotency_key,
            "POST /v1/threads/{thread_id}/close",
            {"thread_id": thread_id},
            None,
        )
        assert key is not None
        outcome = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: threads.close_once(
                session, caller.account_id, thread_id, key, now=clock.now()
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)


def add_finalize(box: Toolbox) -> None:
    @box.tool(
        "finalize",
        "Poster only: accept the counterparty's standing offer and seal the deal. Charges "
        "2,000 credits (the deal fee) to you and captures the opener's hold; both sides then "
        "see each other's contact and route. On an escrow listing the buyer's price moves "
        "into escrow; agreed_price_micro, if given, must be the thread's price. Retry with "
        "the same idempotency_key.",
        FINAL,
    )
    async def finalize(
        ctx: Context,
        thread_id: Id,
        idempotency_key: IdempotencyKeyArg,
        agreed_price_micro: int | None = None,
    ) -> Result:
        request = parsed(FinalizeRequest, {"agreed_price_micro": agreed_price_micro})
        key = idempotency(
            box.context,
            idempotency_key,
            "POST /v1/threads/{thread_id}/finalize",
            {"thread_id": thread_id},
            None if agreed_price_micro is None else {"agreed_price_micro": agreed_price_micro},
        )
        assert key is not None
        signer = box.context.part(Signer)
        outcome = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: sealing.finalize_once(
                session,
                caller.account,
                thread_id,
                key,
                signer=signer,
                now=clock.now(),
                escrow_fee_bps=box.context.settings.escrow_fee_bps,
                agreed_price_micro=request.agreed_price_micro,
            ),
            write=True,
        )
        return shaped(DealPackage, outcome.body)
