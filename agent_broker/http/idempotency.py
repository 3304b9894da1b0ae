"""The Idempotency-Key header, read for the idempotency service (agent_broker.idempotency):
the key, and the call's fingerprint from its operation, path values and body. The body
is already whole and bounded here (agent_broker.http.body)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Request, Response

from agent_broker.http.context import context_of
from agent_broker.idempotency.service import (
    HEADER,
    IdempotencyKey,
    Outcome,
    checked_key,
    fingerprint,
)

_DESCRIPTION = (
    "1 to 255 printable ASCII characters (a UUID is a good choice); a retry with the same "
    "key and request returns the first response."
)


def operation_name(request: Request) -> str:
    route = request.scope.get("route")
    # The route's template; the URL (only built when no route matched) costs more.
    template = route.path if route is not None else request.url.path
    return f"{request.method} {template}"


def _arguments(request: Request, raw: bytes) -> dict[str, Any]:
    body: Any = None
    if raw:
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")  # not JSON: compared as sent
    return {"path": dict(request.path_params), "body": body}


async def _key(request: Request, raw_key: str | None) -> IdempotencyKey | None:
    if raw_key is None:
        return None
    operation = operation_name(request)
    hours = context_of(request).settings.idempotency_retention_hours
    return IdempotencyKey(
        key=checked_key(raw_key),
        operation=operation,
        fingerprint=fingerprint(operation, _arguments(request, await request.body())),
        retention=timedelta(hours=hours),
    )


async def _optional(
    request: Request,
    key: Annotated[str | None, Header(alias=HEADER, description=_DESCRIPTION)] = None,
) -> IdempotencyKey | None:
    return await _key(request, key)


async def _required(
    request: Request, key: Annotated[str, Header(alias=HEADER, description=_DESCRIPTION)]
) -> IdempotencyKey:
    made = await _key(request, key)
    assert made is not None
    return made


OptionalIdempotency = Annotated[IdempotencyKey | None, Depends(_optional)]
RequiredIdempotency = Annotated[IdempotencyKey, Depends(_required)]


def answer(response: Response, outcome: Outcome) -> Any:
    """The outcome's body, rendered through the route's response model, with its status
    (a replay may differ from the route's default, e.g. registration's 200)."""
    response.status_code = outcome.status
    return outcome.body
