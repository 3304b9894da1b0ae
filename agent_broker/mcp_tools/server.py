"""The MCP server of one app: the same tools over streamable HTTP at /mcp (the key in the
x-api-key header of each request) and over stdio (`agent-broker mcp`, the key in
BROKER_API_KEY). Built with the official SDK's MCPServer.

HTTP runs stateless and answers JSON, so any worker of any replica serves any request.
The session manager is made anew in each run of the app's lifespan (the SDK allows one
run per manager), and the route looks it up per request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agent_broker import RELEASE_TAG
from agent_broker.http.context import AppContext
from agent_broker.mcp_tools.tools import register_tools

PATH = "/mcp"
STDIO_KEY_VARIABLE = "BROKER_API_KEY"
INSTRUCTIONS = (
    "Tools of the agent-broker marketplace. Register once (the key is shown once), set "
    "contact and deal route, fund the account, then post listings, open threads on "
    "others', make offers in turn and finalize to seal a deal. Every tool but register, "
    "lookup_reputation and verify_ledger needs the account's API key. A refusal is a tool "
    "error whose structured content is {error: {status, reason, detail}}, the reason code "
    "of the REST interface."
)


def build_server(context: AppContext, *, stdio_key: str | None = None) -> MCPServer:
    server = MCPServer("agent-broker", instructions=INSTRUCTIONS, version=RELEASE_TAG)

    def key_of(ctx: Context) -> str | None:
        request = ctx.request_context.request
        if request is not None:
            return request.headers.get("x-api-key")
        return stdio_key

    register_tools(server, context, key_of)
    return server


class _Endpoint:
    """ASGI endpoint of /mcp: hands each request to the running session manager."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.session_manager.handle_request(scope, receive, send)


def mount(app: FastAPI, context: AppContext) -> MCPServer:
    """Serve the app's tools at /mcp (outside /openapi.json: MCP describes them itself)."""
    server = build_server(context)
    app.router.routes.append(Route(PATH, endpoint=_Endpoint(server)))
    return server


@asynccontextmanager
async def running(server: MCPServer) -> AsyncIterator[None]:
    # The Host and Origin checks guard a local server against DNS rebinding; this one is
    # served on its public name behind the operator's proxy, and every tool that acts
    # needs the account's key.
    server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    try:
        async with server.session_manager.run():
            yield
    except BaseExceptionGroup as group:
        # The manager's task group wraps whatever the rest of the app's start-up or
        # shutdown raised (a bad signing key, say): report that error as itself.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
