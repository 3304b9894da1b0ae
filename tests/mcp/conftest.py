"""MCP clients of the official SDK: over streamable HTTP against the app served by uvicorn
(the key in each request's x-api-key), and over stdio against `agent-broker mcp` run as a
child process on the same database (the key in BROKER_API_KEY)."""

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
    settings = app.state.settings
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
