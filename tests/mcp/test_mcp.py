"""The MCP server through the official SDK's client: the tools listed with typed input
schemas, prices and hints; a whole deal (register, profile, post, open, offer, finalize,
deal, rate) over streamable HTTP and over stdio; problems as tool errors carrying the
reason code; idempotent retries answered alike and charged once."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from tests.support.accounts import fund
from tests.support.http import new_key
from tests.support.market import FUNDS, LISTING
from tests.support.mcp_client import (
    http_session,
    ok,
    refused,
    set_profile,
    sign_up,
    stdio_session,
    trade_deal,
)

TOOLS = {
    "register",
    "get_account",
    "get_profile",
    "set_contact",
    "set_route",
    "get_domain_challenge",
    "verify_domain",
    "read_feed",
    "get_listing",
    "post_listing",
    "open_thread",
    "get_thread",
    "make_offer",
    "close_thread",
    "finalize",
    "get_deal",
    "rate_deal",
    "dispute_deal",
    "deliver_deal",
    "accept_delivery",
    "reject_delivery",
    "rule_on_deal",
    "lookup_reputation",
    "attest_reputation",
    "verify_ledger",
    "latest_events",
}


def test_the_tools_are_listed_with_schemas_prices_and_hints(live_server):
    async def listed():  # type: ignore[no-untyped-def]
        async with http_session(live_server) as session:
            return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in asyncio.run(listed())}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.annotations is not None
        assert "ctx" not in tool.input_schema.get("properties", {})
    for tool in tools.values():  # every description states the price
        assert re.search(r"\bfree\b|\d credits", tool.description, re.IGNORECASE), tool.name
    assert "200 credits" in tools["post_listing"].description
    assert "2,000 credits" in tools["open_thread"].description
    assert "2,000 credits" in tools["finalize"].description
    assert "Free" in tools["read_feed"].description
    post = tools["post_listing"].input_schema
    assert {"title", "category", "listing_type", "body", "idempotency_key"} <= set(post["required"])
    assert post["properties"]["listing_type"]["enum"] == ["buy", "sell"]
    for name in (
        "get_account",
        "read_feed",
        "get_deal",
        "lookup_reputation",
        "verify_ledger",
        "latest_events",
    ):
        assert tools[name].annotations.read_only_hint is True
    for name in ("finalize", "close_thread", "dispute_deal", "accept_delivery", "rule_on_deal"):
        assert tools[name].annotations.destructive_hint is True
    assert tools["make_offer"].annotations.idempotent_hint is False
    assert tools["post_listing"].annotations.idempotent_hint is True


def test_a_whole_deal_over_streamable_http(app, live_server):
    async def trade():  # type: ignore[no-untyped-def]
        async with http_session(live_server) as anonymous:
            seller_id, buyer_id = await sign_up(anonymous), await sign_up(anonymous)
        for made in (seller_id, buyer_id):
            fund(app, made["account_id"], FUNDS, real_money=True)
        async with AsyncExitStack() as stack:
            seller = await stack.enter_async_context(
                http_session(live_server, seller_id["api_key"])
            )
            buyer = await stack.enter_async_context(http_session(live_server, buyer_id["api_key"]))
            await set_profile(seller, "seller")
            await set_profile(buyer, "buyer")
            sealed = await trade_deal(app, seller, buyer)
            account = ok(await seller.call_tool("get_account", {}))
            events = ok(await seller.call_tool("latest_events", {"limit": 100, "wait": 10}))
            later = ok(await seller.call_tool("latest_events", {"after": events["next"]}))
            return sealed, account, events, later

    sealed, account, events, later = asyncio.run(trade())
    # The seller's own events, as GET /v1/events gives them, and nothing after the last.
    types = [event["type"] for event in events["events"]]
    assert types[0] == "thread.opened" and "deal.sealed" in types
    assert later == {"events": [], "next": events["next"]}
    assert sealed["status"] in ("active", "revealed") and sealed["amount_micro"] == DEAL_FEE_MICRO
    # The poster paid the posting fee and the deal fee, as over REST.
    assert account["balance_micro"] == FUNDS - POSTING_FEE_MICRO - DEAL_FEE_MICRO


def test_a_whole_deal_over_stdio(app, client):
    async def trade():  # type: ignore[no-untyped-def]
        async with stdio_session(app) as anonymous:
            tools = {tool.name for tool in (await anonymous.list_tools()).tools}
            assert tools == TOOLS
            seller_id, buyer_id = await sign_up(anonymous), await sign_up(anonymous)
        for made in (seller_id, buyer_id):
            fund(app, made["account_id"], FUNDS, real_money=True)
        async with AsyncExitStack() as stack:
            seller = await stack.enter_async_context(stdio_session(app, seller_id["api_key"]))
            buyer = await stack.enter_async_context(stdio_session(app, buyer_id["api_key"]))
            await set_profile(seller, "seller")
            await set_profile(buyer, "buyer")
            return seller_id, await trade_deal(app, seller, buyer)

    seller_id, sealed = asyncio.run(trade())
    # The same deal, read over REST.
    rest = client.get(f"/v1/deals/{sealed['id']}", headers={"x-api-key": seller_id["api_key"]})
    assert rest.status_code == 200 and rest.json()["id"] == sealed["id"]


def _problems(live_server: str, run: Callable[[Any, Any], Any]) -> Any:
    async def go():  # type: ignore[no-untyped-def]
        async with http_session(live_server) as anonymous:
            made = await sign_up(anonymous)
            async with http_session(live_server, made["api_key"]) as session:
                return await run(anonymous, session)

    return asyncio.run(go())


def test_problems_are_tool_errors_with_the_reason_code(live_server):
    async def run(anonymous, session):  # type: ignore[no-untyped-def]
        return [
            refused(await anonymous.call_tool("get_account", {})),
            refused(await session.call_tool("get_listing", {"listing_id": str(uuid.uuid4())})),
            refused(
                await session.call_tool(
                    "post_listing", {**LISTING, "idempotency_key": new_key(), "price_micro": -5}
                )
            ),
            refused(
                await session.call_tool("post_listing", {**LISTING, "idempotency_key": new_key()})
            ),
            refused(await anonymous.call_tool("register", {"accepted_terms": False})),
        ]

    no_key, missing, invalid, unfunded, terms = _problems(live_server, run)
    assert (no_key["status"], no_key["reason"]) == (401, "unauthorized")
    assert (missing["status"], missing["reason"]) == (404, "not_found")
    assert (invalid["status"], invalid["reason"]) == (400, "invalid_input")
    assert (unfunded["status"], unfunded["reason"]) == (402, "insufficient_funds_self")
    assert terms["reason"] == "terms_required"
    assert all(problem["detail"] for problem in (no_key, missing, invalid, unfunded, terms))


def test_an_argument_of_the_wrong_type_is_refused_before_the_tool_runs(live_server):
    # What docs/agents/mcp.md says: the MCP library refuses it, with a text naming the
    # argument and no problem document.
    async def run(anonymous, session):  # type: ignore[no-untyped-def]
        return [
            await session.call_tool("get_listing", {"listing_id": 0}),
            await session.call_tool("get_listing", {}),
        ]

    for result in _problems(live_server, run):
        assert result.is_error and result.structured_content is None
        assert "listing_id" in result.content[0].text


def test_an_idempotent_retry_answers_alike_and_charges_once(app, live_server):
    async def run(anonymous, session):  # type: ignore[no-untyped-def]
        account = ok(await session.call_tool("get_account", {}))
        fund(app, account["account_id"], FUNDS, real_money=True)
        key = new_key()
        first = ok(await session.call_tool("post_listing", {**LISTING, "idempotency_key": key}))
        again = ok(await session.call_tool("post_listing", {**LISTING, "idempotency_key": key}))
        changed = refused(
            await session.call_tool(
                "post_listing", {**LISTING, "title": "Another title", "idempotency_key": key}
            )
        )
        after = ok(await session.call_tool("get_account", {}))
        return first, again, changed, after

    first, again, changed, after = _problems(live_server, run)
    assert again == first
    assert changed["reason"] == "idempotency_key_reuse"
    assert after["balance_micro"] == FUNDS - POSTING_FEE_MICRO


@pytest.mark.parametrize("name", ["lookup_reputation", "verify_ledger"])
def test_public_tools_need_no_key(live_server, name):
    async def go():  # type: ignore[no-untyped-def]
        async with http_session(live_server) as anonymous:
            made = await sign_up(anonymous)
            profile_handle = None
            async with http_session(live_server, made["api_key"]) as session:
                profile_handle = ok(await session.call_tool("get_account", {}))["handle"]
            arguments = {"handle": profile_handle} if name == "lookup_reputation" else {}
            return await anonymous.call_tool(name, arguments), profile_handle

    result, handle = asyncio.run(go())
    if name == "lookup_reputation":
        assert ok(result)["handle"] == handle
    else:
        # Nothing is sealed yet: the verdict is unavailable, as GET /v1/ledger/verify says.
        assert ok(result)["status_code"] in (200, 404)
