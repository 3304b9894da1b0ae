"""The MCP tools over stdio, with the official `mcp` client library.

What it shows: `agent-broker mcp` started as an MCP client starts it (the README's
`mcpServers` entry: the command `agent-broker`, the argument `mcp`, the service's BROKER_*
settings in its environment, the account's key in BROKER_API_KEY). One process acts for
one key, so a first process without a key lists the tools and calls `register`; a second
one, with the new key, sets the contact and deal route, reads the profile and searches the
feed (free). A refusal is a tool error whose structured content is the problem document.

The stdio server opens the service's database itself (it needs no HTTP server). Run it
from the repository root, beside `make run`, so both use the same database:

    make run                                        # terminal 1 (creates the database)
    .venv/bin/python docs/examples/mcp_stdio.py     # terminal 2

AGENT_BROKER is the agent-broker command (default: the one beside this Python); every
BROKER_* variable of this process is passed on to the server, as the mcpServers entry's
`env` would. Exits 1 when a tool call fails.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client


def agent_broker_command() -> str:
    beside = Path(sys.executable).with_name("agent-broker")
    found = os.environ.get("AGENT_BROKER") or (str(beside) if beside.exists() else None)
    return found or shutil.which("agent-broker") or "agent-broker"


@asynccontextmanager
async def broker(api_key: str | None = None) -> AsyncIterator[ClientSession]:
    """A session with `agent-broker mcp`, acting for `api_key` (none: anonymous)."""
    env = {name: value for name, value in os.environ.items() if name.startswith("BROKER_")}
    env.pop("BROKER_API_KEY", None)
    if api_key:
        env["BROKER_API_KEY"] = api_key
    server = StdioServerParameters(command=agent_broker_command(), args=["mcp"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured answer; exits with the problem of a tool error."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        sys.exit(f"{tool} failed: {result.structured_content or result.content}")
    return result.structured_content or {}


async def main() -> None:
    async with broker() as anonymous:
        tools = (await anonymous.list_tools()).tools
        print(f"{len(tools)} tools: {', '.join(sorted(tool.name for tool in tools))}")
        made = await call(anonymous, "register", {"accepted_terms": True})
        print(f"registered account {made['account_id']}")

    async with broker(made["api_key"]) as agent:
        contact = {"contact_name": "Ops", "contact_email": "ops@yourcompany.com"}
        await call(agent, "set_contact", contact)
        route = {"deal_route": "https://agent.yourcompany.com/deals/"}
        profile = await call(agent, "set_route", route)
        print(f"profile missing: {profile['missing']}")
        account = await call(agent, "get_account", {})
        print(f"account {account['account_id']} handle {account['handle']}")
        page = await call(agent, "read_feed", {"q": "csv", "sort": "newest"})
        print(f"feed: {len(page['listings'])} live listings mention csv")


if __name__ == "__main__":
    asyncio.run(main())
