"""What the tool modules share: the hints, argument types, the REST response shaping, and
the toolbox each registers its tools through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field, TypeAdapter

from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import AppContext
from agent_broker.mcp_tools.plumbing import reasoned
from agent_broker.scanning.brake import Screen, screen_for

Result = dict[str, Any]
READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Changes only the caller's own settings; the same call twice leaves the same state.
SETS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Creates or moves something (credits, a listing, a thread); retried safely with its key.
KEYED = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Irreversible: seals, closes or disputes for good.
FINAL = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# Reaches the caller's own domain over the network.
PROVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)

IdempotencyKeyArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=255,
        description="Any 1-255 printable ASCII characters (a UUID): a retry with the same key "
        "returns the first answer and never charges twice",
    ),
]
Id = Annotated[str, Field(min_length=1, max_length=100)]


def shaped(model: Any, data: Any, *, exclude_none: bool = True) -> Result:
    """The body the REST route would answer, through its response model (or union)."""
    adapter = TypeAdapter(model)
    return adapter.dump_python(
        adapter.validate_python(data), mode="json", exclude_none=exclude_none
    )


@dataclass(frozen=True)
class Toolbox:
    """The server the tools go on, the context whose services they call, and how a call's
    API key is found (the request's x-api-key, or the stdio process's key)."""

    server: MCPServer
    context: AppContext
    key_of: Callable[[Context], str | None]

    def source(self, ctx: Context) -> str:
        """Where a call comes from, for the per-source rate limits."""
        request = ctx.request_context.request
        return client_ip(request) if request is not None else "mcp-stdio"

    def screen(self, account_id: str) -> Screen:
        return screen_for(self.context.rate_limiter, self.context.settings, account_id)

    def tool(self, name: str, description: str, annotations: ToolAnnotations):  # type: ignore[no-untyped-def]
        def register(fn):  # type: ignore[no-untyped-def]
            self.server.tool(name=name, description=description, annotations=annotations)(
                reasoned(fn)
            )
            return fn

        return register
