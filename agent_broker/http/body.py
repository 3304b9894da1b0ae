"""Every request body is read whole, bounded in size and time, before the application
sees the request: no route, dependency or database transaction ever waits on a client
that is still sending. A client trickling its body therefore holds nothing (neither the
SQLite write gate nor a pooled PostgreSQL connection) while it does.

The same gate refuses, as 400 invalid_input, text no route can store faithfully: a NUL
character (in a JSON string, the query or the path; PostgreSQL cannot keep it in text),
a lone surrogate escape in a JSON string (half of a UTF-16 pair, which no UTF-8 text
holds: a database, a JSON answer or a signature would fail on it), and JSON nested
deeper than any request of this interface needs (which would exhaust the recursion of
parsers and fingerprints further in)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_broker.json_input import nests_deeper_than
from agent_broker.problems import PROBLEM_MEDIA_TYPE, Reason, problem_body

# No request of this interface nests deeper than a few levels.
MAX_JSON_DEPTH = 32
# A JSON escape for NUL preceded by an even number of backslashes (so `\\u0000`, a
# backslash followed by the text "u0000", is not one).
_ESCAPED_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_PERCENT_NUL = re.compile(rb"%00")
# A JSON escape of a UTF-16 surrogate (D800-DFFF), paired or not: a cheap first look
# before the body is decoded to find a lone one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _holds_lone_surrogate(body: bytes) -> bool:
    """Whether the JSON body decodes to text with half of a UTF-16 pair (which no UTF-8
    text can hold). Decoded only when it holds a surrogate escape at all (clients that
    escape every non-ASCII character send emoji as escaped pairs)."""
    if not _SURROGATE_ESCAPE.search(body):
        return False
    try:
        decoded = json.loads(body)  # its depth is checked already
    except ValueError:
        return False  # not JSON: the route refuses it
    try:
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _Refusal(Exception):
    def __init__(self, status: int, detail: str, field: str = "body") -> None:
        self.status = status
        self.detail = detail
        self.field = field  # named in `errors`, as request validation problems do


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                raise _Refusal(400, "The Content-Length header is not a number.") from None
    return None


def _chunked(scope: Scope) -> bool:
    return any(name == b"transfer-encoding" for name, _ in scope.get("headers", ()))


def check_text(scope: Scope, body: bytes) -> None:
    """Raise _Refusal for a NUL anywhere a route would read it, over-deep JSON, or a lone
    surrogate in JSON text."""
    path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")
    if b"\x00" in path or _PERCENT_NUL.search(path):
        raise _Refusal(400, "The path contains a NUL character.", "path")
    query = scope.get("query_string", b"")
    if b"\x00" in query or _PERCENT_NUL.search(query):
        raise _Refusal(400, "The query string contains a NUL character.", "query")
    if not body:
        return
    if b"\x00" in body or _ESCAPED_NUL.search(body):
        raise _Refusal(400, "The request body contains a NUL character.")
    if nests_deeper_than(body, MAX_JSON_DEPTH):
        raise _Refusal(400, f"The JSON body nests deeper than {MAX_JSON_DEPTH} levels.")
    if _holds_lone_surrogate(body):
        raise _Refusal(400, "The request body contains a lone UTF-16 surrogate escape.")


class BodyGuardMiddleware:
    """Pure ASGI: buffer the body (at most `max_bytes`, within `timeout` seconds), check
    it, then hand the application a receive() that replays it."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        timeout: float,
        base_url: Callable[[], str],
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.base_url = base_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            declared = _declared_length(scope)
            if declared is not None and declared > self.max_bytes:
                raise _Refusal(413, self._too_large())
            if declared is None and not _chunked(scope):
                # No Content-Length and no chunked body: HTTP/1.1 says there is no body,
                # so there is nothing to wait for (most GETs).
                check_text(scope, b"")
                await self.app(scope, receive, send)
                return
            body, disconnected = await self._read(receive)
            check_text(scope, body)
        except _Refusal as refusal:
            await self._refuse(send, refusal)
            return
        if disconnected:
            return  # the client went away mid-body: nobody is left to answer
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # later calls wait for the disconnect, as usual

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return b"", True
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise _Refusal(413, self._too_large())
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise _Refusal(
                408, f"The request body did not arrive within {self.timeout:g} seconds."
            ) from None
        return b"".join(chunks), False

    def _too_large(self) -> str:
        return f"The request body is larger than {self.max_bytes} bytes."

    async def _refuse(self, send: Send, refusal: _Refusal) -> None:
        errors = {"errors": [{"field": refusal.field, "message": refusal.detail}]}
        body = json.dumps(
            problem_body(
                self.base_url(), refusal.status, Reason.invalid_input, refusal.detail, errors
            )
        ).encode()
        headers = [
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        if refusal.status in (408, 413):
            # The rest of the body is not read: the connection cannot be reused.
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
