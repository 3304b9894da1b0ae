"""Request ids and the access log, as one pure-ASGI middleware around the whole app.

Each HTTP request gets an id: the caller's `X-Request-ID` when it is a short safe token,
otherwise a fresh one. It is bound into structlog's context for every line logged while
the request is handled, returned in the `X-Request-ID` response header, and written on
the one access line logged per request (method, route template, status, duration_ms).
Neither headers (x-api-key, Authorization), the query string nor bodies are logged.

The middleware wraps even Starlette's error middleware (see BrokerAPI in agent_broker.app),
so a 500 answer carries the id too and the unhandled-exception line logged on the way
carries it as well."""

from __future__ import annotations

import logging
import re
import secrets
import time
import traceback
from collections.abc import Callable

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-Request-ID"
_HEADER_KEY = b"x-request-id"
# Letters, digits and hyphens: UUIDs, hex ids, ULIDs, trace ids. No `_`, so nothing shaped
# like an API key (`ab_live_...`) is ever echoed into the logs through this header.
_SAFE = re.compile(r"[A-Za-z0-9-]{8,64}")
UNMATCHED = "unmatched"

# Told about every finished request: (method, route template, status, seconds).
RequestObserver = Callable[[str, str, int, float], None]

log = structlog.get_logger("agent_broker.access")
# Asked before each access line: a line below the configured level is then not even built.
_access = logging.getLogger("agent_broker.access")


def _stack(error: BaseException) -> list[str]:
    """Where an error was raised, innermost last, as "file:line in function" (no message,
    no source line)."""
    return [
        f"{frame.filename}:{frame.lineno} in {frame.name}"
        for frame in traceback.extract_tb(error.__traceback__)
    ]


def accepted_request_id(value: str | None) -> str | None:
    if value is not None and _SAFE.fullmatch(value):
        return value
    return None


def new_request_id() -> str:
    return secrets.token_hex(16)  # 32 hex digits, like a UUID's hex, for less work


def route_template(scope: Scope) -> str:
    """The matched route's path template (`/v1/listings/{listing_id}`), never the raw
    path, so ids in paths neither reach the logs' route field nor multiply metric series."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else UNMATCHED


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, observers: tuple[RequestObserver, ...] = ()) -> None:
        self.app = app
        self.observers = observers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for name, value in scope.get("headers", ()):
            if name == _HEADER_KEY:
                incoming = value.decode("latin-1")
                break
        request_id = accepted_request_id(incoming) or new_request_id()
        # Each request runs in a task of its own (a copy of the context), so nothing bound
        # here leaks into another request; it is left bound for the error handler's line.
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        status = 500
        answered = False
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status, answered
            if message["type"] == "http.response.start":
                status, answered = message["status"], True
                headers = [
                    (k, v) for k, v in message.get("headers", ()) if k.lower() != _HEADER_KEY
                ]
                headers.append((_HEADER_KEY, request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as error:
            if not answered:
                raise
            # Starlette's error middleware has answered 500 (the problem handler logged the
            # error's type under this request's id) and raised the error again for the
            # server, which would log it with its message: a database error's message can
            # quote the values of a row (PostgreSQL's DETAIL line). Its stack is logged
            # here instead, without the message, and the server is told nothing more.
            log.error(
                "unhandled_exception_stack", error_type=type(error).__name__, stack=_stack(error)
            )
        finally:
            elapsed = time.perf_counter() - started
            method, route = scope.get("method", ""), route_template(scope)
            if _access.isEnabledFor(logging.INFO):
                log.info(
                    "request",
                    method=method,
                    route=route,
                    status=status,
                    duration_ms=round(elapsed * 1000, 2),
                )
            for observe in self.observers:
                observe(method, route, status, elapsed)
