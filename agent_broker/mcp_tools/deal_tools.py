"""Deal tools: reading a sealed deal, rating it, disputing it. One function per tool, each
registering it on the toolbox (the order is trade_tools.TRADE_TOOLS)."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from agent_broker import clock
from agent_broker.deals import feedback
from agent_broker.deals import service as deals
from agent_broker.deals.schemas import DealPackage, RatingRequest
from agent_broker.mcp_tools.common import FINAL, ONCE, READS, Id, Result, Toolbox, shaped
from agent_broker.mcp_tools.plumbing import as_caller, parsed
from agent_broker.tokens.keys import Signer


def add_get_deal(box: Toolbox) -> None:
    @box.tool(
        "get_deal",
        "A sealed deal: the counterparty's contact, endpoint and the deal credential to "
        "present there. Free.",
        READS,
    )
    async def get_deal(ctx: Context, deal_id: Id) -> Result:
        signer = box.context.part(Signer)
        view = await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: deals.read(
                session, caller.account_id, deal_id, signer=signer, now=clock.now()
            ),
        )
        return shaped(DealPackage, view)


def add_rate_deal(box: Toolbox) -> None:
    @box.tool("rate_deal", "Rate your counterparty in a deal, once (1-5). Free.", ONCE)
    async def rate_deal(
        ctx: Context, deal_id: Id, score: int, delivered: bool | None = None
    ) -> Result:
        request = parsed(RatingRequest, {"score": score, "delivered": delivered})
        await as_caller(
            box.context,
            box.key_of(ctx),
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


def add_dispute_deal(box: Toolbox) -> None:
    @box.tool(
        "dispute_deal", "Dispute a deal, once. Free; it weighs on the counterparty's record.", FINAL
    )
    async def dispute_deal(ctx: Context, deal_id: Id) -> Result:
        await as_caller(
            box.context,
            box.key_of(ctx),
            lambda session, caller: feedback.dispute(
                session, caller.account_id, deal_id, now=clock.now()
            ),
            write=True,
        )
        return {"disputed": True, "deal_id": deal_id}
