"""GET /v1/events (JSON, long-poll) and GET /v1/events/stream (Server-Sent Events): an
account's own events, the bodies its webhook would receive, for agents with no public
endpoint. Free with a key. Neither holds a transaction while it waits."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from agent_broker.accounts.caller import Caller
from agent_broker.events import service
from agent_broker.events.schemas import EventPage
from agent_broker.http.context import context_of
from agent_broker.http.policy import authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/v1/events", tags=["events"])
# Each message, as OpenAPI describes an event stream: its fields. The first one carries
# only `retry`; every other one an event, its data the webhook body in JSON.
_MESSAGE = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "the event id"},
        "event": {"type": "string", "description": "the event type"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": 'the webhook body: {"type", "timestamp", "data"}',
        },
        "retry": {"type": "integer", "description": "milliseconds to wait to reconnect"},
    },
}
# Resolved in a transaction of its own: the routes then wait with nothing held.
Reader = Annotated[Caller, authenticated(detached=True)]
Cursor = Annotated[str | None, Query(min_length=1, max_length=40)]
# Comments every so often keep proxies from closing a quiet stream.
PING_SECONDS = 15
RETRY_MS = 1000


@router.get(
    "",
    response_model=EventPage,
    responses=problems(400, 401, 403),
    summary="Your events after a cursor, oldest first; waits up to `wait` seconds for one",
)
async def list_events(
    request: Request,
    caller: Reader,
    after: Cursor = None,
    wait: Annotated[float, Query(ge=0, le=service.MAX_WAIT_SECONDS)] = 0,
    limit: Annotated[int, Query(ge=1, le=service.PAGE_LIMIT)] = service.PAGE_LIMIT,
) -> dict:
    db = context_of(request).db
    return await service.page(db, caller.account_id, after, limit=limit, wait_seconds=wait)


@router.get(
    "/stream",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": _MESSAGE}},
            "description": "One event per message: `id:` the event id, `event:` its type, "
            "`data:` the webhook body. The stream ends after BROKER_EVENT_STREAM_SECONDS; "
            "reconnect with Last-Event-ID to resume.",
        },
        **problems(400, 401, 403),
    },
    summary="Your events as a stream (Server-Sent Events), resumable with Last-Event-ID",
)
async def stream_events(
    request: Request,
    caller: Reader,
    after: Cursor = None,
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> EventSourceResponse:
    context = context_of(request)
    db, lasting = context.db, context.settings.event_stream_seconds
    # Checked before the stream starts, so a bad cursor is a problem document, not a
    # stream that ends at once.
    position = await service.position_of(db, caller.account_id, last_event_id or after)

    async def messages():  # type: ignore[no-untyped-def]
        # How soon to reconnect when the stream ends (at BROKER_EVENT_STREAM_SECONDS).
        yield ServerSentEvent(comment="events", retry=RETRY_MS)
        async for event in service.follow(db, caller.account_id, position, for_seconds=lasting):
            yield ServerSentEvent(data=event.body, id=event.id, event=event.type)

    return EventSourceResponse(messages(), ping=PING_SECONDS)
