"""MCP clients of the official SDK: over streamable HTTP against the app served by uvicorn
(the key in each request's x-api-key), and over stdio against `agent-broker mcp` run as a
child process on the same database (the key in BROKER_API_KEY); and the steps of a whole
deal through the tools."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from fastapi import FastAPI
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.support.http import new_key
from tests.support.market import LISTING

AGENT_BROKER = str(Path(sys.executable).with_name("agent-broker"))


@asynccontextmanager
async def http_session(base_url: str, api_key: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"x-api-key": api_key} if api_key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def stdio_environment(app: FastAPI, api_key: str | None) -> dict[str, str]:
    """The child's settings: the test app's own (same database, keys and base URL)."""
    settings = app.state.context.settings
    environment = {
        "BROKER_DATABASE_URL": settings.database_url,
        "BROKER_VAR_DIR": settings.var_dir,
        "BROKER_KEY_HASH_SECRET": settings.key_hash_secret,
        "BROKER_PUBLIC_BASE_URL": settings.public_base_url,
        "BROKER_REGISTER_RATE_LIMIT": settings.register_rate_limit,
        "BROKER_JOBS_ENABLED": "false",
        "BROKER_LOG_LEVEL": "WARNING",
    }
    if api_key:
        environment["BROKER_API_KEY"] = api_key
    return environment


@asynccontextmanager
async def stdio_session(app: FastAPI, api_key: str | None = None) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=AGENT_BROKER, args=["mcp"], env=stdio_environment(app, api_key)
    )
    with open("/dev/null", "w") as quiet:  # noqa: SIM117 - a sync and an async context
        async with (
            stdio_client(parameters, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def ok(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured answer; fails the test on a tool error."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def refused(result: CallToolResult) -> dict[str, Any]:
    """The problem members of a tool error."""
    assert result.is_error, result.structured_content
    error = result.structured_content["error"]
    assert json.loads(result.content[0].text) == {"error": error}
    return error


async def sign_up(session) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return ok(await session.call_tool("register", {"accepted_terms": True}))


async def set_profile(session, name: str) -> None:  # type: ignore[no-untyped-def]
    ok(
        await session.call_tool(
            "set_contact", {"contact_name": name, "contact_email": "ops@agents.dev"}
        )
    )
    profile = ok(
        await session.call_tool(
            "set_route",
            {"deal_route": f"https://agents.dev/{name}/", "route_protocol_binding": "JSONRPC"},
        )
    )
    assert profile["missing"] == []


async def trade_deal(app, seller, buyer) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """post, open, offer, offer, finalize, read, rate: each side through its session."""
    listing = ok(await seller.call_tool("post_listing", {**LISTING, "idempotency_key": new_key()}))
    thread = ok(
        await buyer.call_tool(
            "open_thread",
            {
                "listing_id": listing["id"],
                "diff": "2 days, as listed",
                "idempotency_key": new_key(),
            },
        )
    )
    assert thread["turn"] == "poster"
    ok(await seller.call_tool("make_offer", {"thread_id": thread["id"], "diff": "3 days"}))
    agreed = ok(
        await buyer.call_tool("make_offer", {"thread_id": thread["id"], "diff": "3 days, agreed"})
    )
    assert agreed["turn"] == "poster"
    seen = ok(await buyer.call_tool("get_thread", {"thread_id": thread["id"]}))
    assert seen["diff"] == "3 days, agreed"
    sealed = ok(
        await seller.call_tool(
            "finalize", {"thread_id": thread["id"], "idempotency_key": new_key()}
        )
    )
    deal = ok(await buyer.call_tool("get_deal", {"deal_id": sealed["id"]}))
    assert deal["id"] == sealed["id"] and deal["credential"]
    for session, score in ((seller, 5), (buyer, 4)):
        rated = ok(
            await session.call_tool(
                "rate_deal", {"deal_id": sealed["id"], "score": score, "delivered": True}
            )
        )
        assert rated == {"rated": True, "deal_id": sealed["id"]}
    return sealed
