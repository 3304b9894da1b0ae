"""Escrow deal tools: delivery, acceptance, rejection, ruling (docs/interface.md §11.4).
One function per tool, each registering it on the toolbox (the order is
trade_tools.TRADE_TOOLS). Each step takes an idempotency key, as its REST route requires
one, and answers the deal as its caller reads it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import Context

from agent_broker import clock
from agent_broker.deals import settlement
from agent_broker.deals.schemas import (
    DealPackage,
    DeliveryRequest,
    RejectionRequest,
    RulingRequest,
)
from agent_broker.idempotency.service import Outcome
from agent_broker.mcp_tools.common import (
    FINAL,
    KEYED,
    Id,
    IdempotencyKeyArg,
    Result,
    Toolbox,
    shaped,
)
from agent_broker.mcp_tools.plumbing import as_caller, idempotency, parsed
from agent_broker.tokens.keys import Signer


async def _step(
    box: Toolbox,
    ctx: Context,
    raw_key: str,
    deal_id: str,
    step: str,
    sent: Any,
    take: Callable[..., Outcome],
    **options: Any,
) -> Result:
    """Take an escrow step (`take`, a function of agent_broker.deals.settlement) as the
    caller, under the key its REST route (.../{step}) would make of the same call (same
    operation name and fingerprint); the deal as the caller reads it."""
    route = f"POST /v1/deals/{{deal_id}}/{step}"
    key = idempotency(box.context, raw_key, route, {"deal_id": deal_id}, sent)
    assert key is not None
    signer = box.context.part(Signer)
    outcome = await as_caller(
        box.context,
        box.key_of(ctx),
        lambda session, caller: take(
            session, caller.account_id, deal_id, key, signer=signer, now=clock.now(), **options
        ),
        write=True,
    )
    return shaped(DealPackage, outcome.body)


def add_deliver_deal(box: Toolbox) -> None:
    @box.tool(
        "deliver_deal",
        "Seller, escrow deals: declare the work delivered (an optional note and the work's "
        "SHA-256); the buyer then has the listing's acceptance hours to accept or reject, "
        "after which the price is released to you. Free. Retry with the same idempotency_key.",
        KEYED,
    )
    async def deliver_deal(
        ctx: Context,
        deal_id: Id,
        idempotency_key: IdempotencyKeyArg,
        note: str | None = None,
        evidence_sha256: str | None = None,
    ) -> Result:
        fields = {"note": note, "evidence_sha256": evidence_sha256}
        request = parsed(DeliveryRequest, fields)
        sent = {k: v for k, v in fields.items() if v is not None}
        return await _step(
            box,
            ctx,
            idempotency_key,
            deal_id,
            "delivery",
            sent,
            settlement.deliver,
            note=request.note,
            evidence_sha256=request.evidence_sha256,
        )


def add_accept_delivery(box: Toolbox) -> None:
    @box.tool(
        "accept_delivery",
        "Buyer, escrow deals: accept the delivery; the price goes to the seller less the "
        "escrow fee. Free. Retry with the same idempotency_key.",
        FINAL,
    )
    async def accept_delivery(
        ctx: Context, deal_id: Id, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        return await _step(
            box, ctx, idempotency_key, deal_id, "acceptance", None, settlement.accept
        )


def add_reject_delivery(box: Toolbox) -> None:
    @box.tool(
        "reject_delivery",
        "Buyer, escrow deals: reject the delivery with a reason; the price stays held until "
        "the deal's evaluator rules. Free. Retry with the same idempotency_key.",
        FINAL,
    )
    async def reject_delivery(
        ctx: Context, deal_id: Id, reason: str, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        request = parsed(RejectionRequest, {"reason": reason})
        return await _step(
            box,
            ctx,
            idempotency_key,
            deal_id,
            "rejection",
            {"reason": reason},
            settlement.reject,
            reason=request.reason,
        )


def add_rule_on_deal(box: Toolbox) -> None:
    @box.tool(
        "rule_on_deal",
        "The deal's evaluator, on a rejected escrow delivery: release (to the seller), refund "
        "(to the buyer) or split (seller_share_bps of 10,000 to the seller). Answers a signed "
        "ruling token. Free. Retry with the same idempotency_key.",
        FINAL,
    )
    async def rule_on_deal(
        ctx: Context,
        deal_id: Id,
        outcome: Literal["release", "refund", "split"],
        reason: str,
        idempotency_key: IdempotencyKeyArg,
        seller_share_bps: int | None = None,
    ) -> Result:
        fields = {"outcome": outcome, "seller_share_bps": seller_share_bps, "reason": reason}
        request = parsed(RulingRequest, fields)
        sent = {k: v for k, v in fields.items() if v is not None}
        return await _step(
            box,
            ctx,
            idempotency_key,
            deal_id,
            "ruling",
            sent,
            settlement.rule,
            outcome=request.outcome,
            seller_share_bps=request.seller_share_bps,
            reason=request.reason,
        )
