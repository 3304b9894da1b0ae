"""The tools: one per agent operation, each calling the service its REST route calls, with
the route's request model, idempotency and response model. Prices are in each
description; hints say what a tool changes."""

from __future__ import annotations

from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer

from agent_broker.http.context import AppContext
from agent_broker.mcp_tools.account_tools import register_account_tools
from agent_broker.mcp_tools.common import Toolbox
from agent_broker.mcp_tools.event_tools import register_event_tools
from agent_broker.mcp_tools.record_tools import register_record_tools
from agent_broker.mcp_tools.trade_tools import register_trade_tools


def register_tools(
    server: MCPServer, context: AppContext, key_of: Callable[[Context], str | None]
) -> None:
    box = Toolbox(server, context, key_of)
    register_account_tools(box)
    register_trade_tools(box)
    register_record_tools(box)
    register_event_tools(box)
