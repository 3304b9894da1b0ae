"""Minimal HTTP/1.1 over asyncio streams: just enough for keep-alive load, the deal cycle
and setup calls.

No HTTP client library on purpose: the load generator shares the CPUs with the server,
and a full client spends more per request than a bare FastAPI route does."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HEAD_END = b"\r\n\r\n"


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def closes(self) -> bool:
        """The server will close the connection after this response."""
        return self.headers.get("connection", "").lower() == "close"

    def json(self) -> Any:
        return json.loads(self.body)


def encode_request(
    method: str,
    path: str,
    host: str,
    port: int,
    headers: Mapping[str, str] | None = None,
    json_body: Any = None,
) -> bytes:
    """The request's bytes; a JSON body is encoded and typed unless headers say otherwise."""
    fields = {"host": f"{host}:{port}", **{k.lower(): v for k, v in (headers or {}).items()}}
    body = b""
    if json_body is not None:
        body = json.dumps(json_body, separators=(",", ":")).encode()
        fields.setdefault("content-type", "application/json")
        fields["content-length"] = str(len(body))
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items())
    return f"{method} {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body


async def read_response(reader: asyncio.StreamReader) -> Response:
    head = await reader.readuntil(HEAD_END)
    status_line, *header_lines = head[: -len(HEAD_END)].decode("latin-1").split("\r\n")
    try:
        status = int(status_line.split(" ", 2)[1])
    except (IndexError, ValueError):
        raise ValueError(f"not an HTTP status line: {status_line!r}") from None
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        # 204/304 and friends carry no body; anything else without a length is not
        # something uvicorn sends on a keep-alive connection.
        body = b""
    return Response(status, headers, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers expected: just the final CRLF
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


@dataclass(frozen=True)
class Client:
    """One-off requests for scenario setup (a fresh connection each, so simple)."""

    host: str
    port: int
    timeout: float = 30.0

    async def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> Response:
        payload = encode_request(method, path, self.host, self.port, headers, json_body)
        async with asyncio.timeout(self.timeout):
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(payload)
                return await read_response(reader)
            finally:
                writer.close()


# uvicorn closes a keep-alive connection idle for 5 s (its default); a connection idle
# for longer than this is not reused, as an HTTP client's pool would not reuse it, so a
# request is never sent into a close already on its way.
MAX_IDLE_S = 4.0


class Connection:
    """One keep-alive connection, as an agent holds to the service: opened on first use and
    again after the server closed it, it sat idle too long or a request failed on it."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._last_used = 0.0

    async def request(
        self,
        method: str,
        path: str,
        *,
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> Response:
        """The response; raises OSError, TimeoutError or asyncio.IncompleteReadError when
        none came (the connection is then closed, and reopened by the next request)."""
        payload = encode_request(method, path, self.host, self.port, headers, json_body)
        if self._streams is not None and (
            self._streams[0].at_eof() or time.monotonic() - self._last_used > MAX_IDLE_S
        ):
            self.close()  # closed by the server, or about to be
        try:
            async with asyncio.timeout(self.timeout):
                if self._streams is None:
                    self._streams = await asyncio.open_connection(self.host, self.port)
                reader, writer = self._streams
                writer.write(payload)
                response = await read_response(reader)
        except BaseException:
            self.close()
            raise
        self._last_used = time.monotonic()
        if response.closes:
            self.close()
        return response

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
