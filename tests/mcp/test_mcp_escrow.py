"""Escrow deals over MCP (docs/interface.md §11.4): an escrow listing posted, opened and
haggled over with prices, sealed with the buyer's price held, delivered and accepted; a
rejected delivery ruled on by the listing's evaluator; refusals as tool errors carrying
the reason code, and a step retried with its key answered alike."""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import AsyncExitStack
from typing import Any

from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from tests.support.accounts import fund
from tests.support.http import new_key
from tests.support.market import LISTING
from tests.support.mcp_client import http_session, ok, refused, set_profile, sign_up

PRICE = 2_500_000
OPENING_PRICE = 2_000_000
FEE_BPS = 100  # BROKER_ESCROW_FEE_BPS's default
EVIDENCE = hashlib.sha256(b"the cleaned CSV").hexdigest()


async def _parties(app, live_server: str, stack: AsyncExitStack, *, evaluator: bool):  # type: ignore[no-untyped-def]
    """A seller funded for a listing and a deal fee, a buyer for a deal fee and the price,
    each with a complete profile; and an unfunded evaluator when asked."""
    async with http_session(live_server) as anonymous:
        made = [await sign_up(anonymous) for _ in range(3 if evaluator else 2)]
    fund(app, made[0]["account_id"], POSTING_FEE_MICRO + DEAL_FEE_MICRO, real_money=True)
    fund(app, made[1]["account_id"], DEAL_FEE_MICRO + PRICE, real_money=True)
    sessions = [
        await stack.enter_async_context(http_session(live_server, each["api_key"])) for each in made
    ]
    await set_profile(sessions[0], "seller")
    await set_profile(sessions[1], "buyer")
    return sessions


async def _sealed(seller, buyer, **listing: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """An escrow sell listing at PRICE, opened at the listing's price, sealed."""
    posted = ok(
        await seller.call_tool(
            "post_listing",
            {
                **LISTING,
                "price_micro": PRICE,
                "settlement": "escrow",
                "idempotency_key": new_key(),
                **listing,
            },
        )
    )
    thread = ok(
        await buyer.call_tool(
            "open_thread",
            {"listing_id": posted["id"], "diff": "As listed", "idempotency_key": new_key()},
        )
    )
    return ok(
        await seller.call_tool(
            "finalize", {"thread_id": thread["id"], "idempotency_key": new_key()}
        )
    )


async def _step(agent, tool: str, deal: dict[str, Any], key: str | None = None, **arguments: Any):  # type: ignore[no-untyped-def]
    """Call an escrow step's tool on the deal, with a fresh idempotency key unless given."""
    return await agent.call_tool(
        tool, {"deal_id": deal["id"], "idempotency_key": key or new_key(), **arguments}
    )


def test_an_escrow_deal_delivered_and_accepted(app, live_server):
    async def trade():  # type: ignore[no-untyped-def]
        async with AsyncExitStack() as stack:
            seller, buyer = await _parties(app, live_server, stack, evaluator=False)
            listing = ok(
                await seller.call_tool(
                    "post_listing",
                    {
                        **LISTING,
                        "price_micro": PRICE,
                        "settlement": "escrow",
                        "delivery_hours": 24,
                        "acceptance_hours": 12,
                        "idempotency_key": new_key(),
                    },
                )
            )
            thread = ok(
                await buyer.call_tool(
                    "open_thread",
                    {
                        "listing_id": listing["id"],
                        "diff": "2 days",
                        "price_micro": OPENING_PRICE,
                        "idempotency_key": new_key(),
                    },
                )
            )
            opened = ok(await buyer.call_tool("get_account", {}))
            ok(await seller.call_tool("make_offer", {"thread_id": thread["id"], "diff": "3 days"}))
            agreed = ok(
                await buyer.call_tool(
                    "make_offer",
                    {"thread_id": thread["id"], "diff": "3 days, agreed", "price_micro": PRICE},
                )
            )
            mismatch = refused(
                await seller.call_tool(
                    "finalize",
                    {
                        "thread_id": thread["id"],
                        "agreed_price_micro": OPENING_PRICE,
                        "idempotency_key": new_key(),
                    },
                )
            )
            deal = ok(
                await seller.call_tool(
                    "finalize",
                    {
                        "thread_id": thread["id"],
                        "agreed_price_micro": PRICE,
                        "idempotency_key": new_key(),
                    },
                )
            )
            sealed = ok(await buyer.call_tool("get_account", {}))
            early = refused(await _step(buyer, "accept_delivery", deal))
            not_seller = refused(await _step(buyer, "deliver_deal", deal))
            delivered = ok(
                await _step(
                    seller,
                    "deliver_deal",
                    deal,
                    note="Cleaned file sent to your route",
                    evidence_sha256=EVIDENCE,
                )
            )
            key = new_key()
            accepted = ok(await _step(buyer, "accept_delivery", deal, key))
            again = ok(await _step(buyer, "accept_delivery", deal, key))
            settled = refused(await _step(buyer, "accept_delivery", deal))
            balances = [ok(await each.call_tool("get_account", {})) for each in (seller, buyer)]
            return (
                listing, opened, agreed, mismatch, deal, sealed, early, not_seller,
                delivered, accepted, again, settled, balances,
            )  # fmt: skip

    (
        listing, opened, agreed, mismatch, deal, sealed, early, not_seller,
        delivered, accepted, again, settled, (seller, buyer),
    ) = asyncio.run(trade())  # fmt: skip
    assert listing["settlement"] == "escrow"
    assert (listing["delivery_hours"], listing["acceptance_hours"]) == (24, 12)
    assert listing["evaluator"] == "operator"
    # Opening held the deal fee and the opening price; the buyer's offer moved the hold.
    assert opened["held_micro"] == DEAL_FEE_MICRO + OPENING_PRICE
    assert agreed["price_micro"] == PRICE
    assert (mismatch["status"], mismatch["reason"]) == (402, "held_funds_mismatch")
    escrow = deal["escrow"]
    assert (escrow["status"], escrow["amount_micro"], escrow["fee_bps"]) == ("held", PRICE, FEE_BPS)
    # Sealed: the price is in escrow and still counted as held for the buyer.
    assert sealed["held_micro"] == PRICE and sealed["balance_micro"] == 0
    assert (early["status"], early["reason"]) == (409, "out_of_turn")
    assert (not_seller["status"], not_seller["reason"]) == (403, "forbidden")
    assert delivered["escrow"]["status"] == "delivered"
    assert delivered["escrow"]["delivery"]["evidence_sha256"] == EVIDENCE
    assert accepted["escrow"]["status"] == "released" and again == accepted
    assert (settled["status"], settled["reason"]) == (409, "already_finalized")
    fee = PRICE * FEE_BPS // 10_000
    assert accepted["escrow"]["settlement"]["released_micro"] == PRICE - fee
    assert seller["balance_micro"] == PRICE - fee
    assert (buyer["balance_micro"], buyer["held_micro"]) == (0, 0)


def test_a_rejected_delivery_ruled_on_by_the_evaluator(app, live_server):
    async def trade():  # type: ignore[no-untyped-def]
        async with AsyncExitStack() as stack:
            seller, buyer, evaluator = await _parties(app, live_server, stack, evaluator=True)
            handle = ok(await evaluator.call_tool("get_account", {}))["handle"]
            deal = await _sealed(seller, buyer, evaluator=handle)
            ok(await _step(seller, "deliver_deal", deal))
            rejected = ok(
                await _step(buyer, "reject_delivery", deal, reason="Half the rows are missing")
            )
            by_party = refused(
                await _step(seller, "rule_on_deal", deal, outcome="release", reason="Mine")
            )
            seen = ok(await evaluator.call_tool("get_deal", {"deal_id": deal["id"]}))
            ruled = ok(
                await _step(
                    evaluator,
                    "rule_on_deal",
                    deal,
                    outcome="split",
                    seller_share_bps=6_000,
                    reason="Half delivered, and the rest late",
                )
            )
            balances = [ok(await each.call_tool("get_account", {})) for each in (seller, buyer)]
            return handle, rejected, by_party, seen, ruled, balances

    handle, rejected, by_party, seen, ruled, (seller, buyer) = asyncio.run(trade())
    assert rejected["escrow"]["status"] == "rejected"
    assert rejected["escrow"]["evaluator"] == handle
    assert (by_party["status"], by_party["reason"]) == (403, "forbidden")
    # The evaluator reads the escrow, not the parties' contact or the deal credential.
    assert seen["escrow"]["status"] == "rejected" and "credential" not in seen
    assert ruled["escrow"]["status"] == "split"
    assert ruled["escrow"]["ruling"]["token"].startswith("v4.public.")
    share = PRICE * 6_000 // 10_000
    fee = share * FEE_BPS // 10_000
    assert seller["balance_micro"] == share - fee
    assert (buyer["balance_micro"], buyer["held_micro"]) == (PRICE - share, 0)
