"""The caller's latest events over MCP: what GET /v1/events answers; by default without
waiting (a tool call should not hang), or waiting up to `wait` seconds for one."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from agent_broker.events import service
from agent_broker.events.schemas import EventPage
from agent_broker.mcp_tools.common import READS, Result, Toolbox, shaped
from agent_broker.mcp_tools.plumbing import account_of


def register_event_tools(box: Toolbox) -> None:
    context, tool, key_of = box.context, box.tool, box.key_of

    @tool(
        "latest_events",
        "Your events (thread opened, offers, closes, deals sealed, rated, disputed), oldest "
        "first, the bodies your webhook would receive; pass `next` as `after` to read on. "
        "`wait` (0-25 s) waits for a first one. Kept for BROKER_EVENT_RETENTION_HOURS. Free.",
        READS,
    )
    async def latest_events(
        ctx: Context,
        after: Annotated[str | None, Field(min_length=1, max_length=40)] = None,
        limit: Annotated[int, Field(ge=1, le=service.PAGE_LIMIT)] = 20,
        wait: Annotated[float, Field(ge=0, le=service.MAX_WAIT_SECONDS)] = 0,
    ) -> Result:
        account = await account_of(context, key_of(ctx))
        page = await service.page(context.db, account.id, after, limit=limit, wait_seconds=wait)
        return shaped(EventPage, page, exclude_none=False)
