"""Your events as iterators: pages read by long-poll (GET /v1/events), or the Server-Sent
Events stream (GET /v1/events/stream), reconnected with Last-Event-ID whenever the service
ends it. Both yield the same `EventOut` (id, type, timestamp, data)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field

from agent_broker_client.errors import problem_of
from agent_broker_client.models import EventOut

STREAM_PATH = "/v1/events/stream"
LONGEST_WAIT = 25  # seconds: what the service allows a long-poll
# The only line ends of an event stream. Not str.splitlines (nor httpx's iter_lines, which
# uses it): that also ends lines at U+2028, U+0085, form feeds and the like, which JSON text
# in a `data:` line may hold as they are.
_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass
class LineSplitter:
    """An event stream's bytes in, as they arrive, its complete lines out: ended by CR LF,
    LF or CR only, as the Server-Sent Events format has it. A last line without its end
    is never given out; the format discards it."""

    _pending: bytearray = field(default_factory=bytearray)
    _after_cr: bool = False  # a CR ended the last chunk: a LF opening the next ends nothing
    _first: bool = True

    def feed(self, chunk: bytes) -> list[str]:
        if not chunk:
            return []
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        # A CR that ends a chunk ends its line at once, rather than waiting on the next chunk.
        self._after_cr = chunk.endswith(b"\r")
        # CR and LF bytes never occur inside a UTF-8 character: split first, decode after.
        parts = _LINE_END.split(chunk)
        self._pending += parts[0]
        if len(parts) == 1:
            return []
        complete = [bytes(self._pending), *parts[1:-1]]
        self._pending = bytearray(parts[-1])
        lines = [line.decode("utf-8", errors="replace") for line in complete]
        if self._first:
            self._first = False
            lines[0] = lines[0].removeprefix(_BOM)
        return lines


@dataclass
class MessageReader:
    """Server-Sent Events lines in, complete messages out (comments and pings skipped)."""

    fields: dict[str, str] = field(default_factory=dict)

    def feed(self, line: str) -> EventOut | None:
        if line == "":
            done, self.fields = self.fields, {}
            if "data" in done and "id" in done:
                return EventOut(id=done["id"], **json.loads(done["data"]))
            return None
        if not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            self.fields[name] = self.fields[name] + "\n" + value if name in self.fields else value
        return None


def stream_headers(api_key: str | None, last_event_id: str | None) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if api_key:
        headers["x-api-key"] = api_key
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    return headers


def refused(status: int, body: bytes) -> Exception:
    try:
        document = json.loads(body)
    except ValueError:
        document = {"detail": body.decode(errors="replace")}
    return problem_of(status, document)


def messages(chunks: Iterable[bytes]) -> Iterator[EventOut]:
    """The events of a stream's bytes (Response.iter_bytes)."""
    splitter, reader = LineSplitter(), MessageReader()
    for chunk in chunks:
        for line in splitter.feed(chunk):
            if (event := reader.feed(line)) is not None:
                yield event


async def amessages(chunks: AsyncIterator[bytes]) -> AsyncIterator[EventOut]:
    """The events of a stream's bytes (Response.aiter_bytes)."""
    splitter, reader = LineSplitter(), MessageReader()
    async for chunk in chunks:
        for line in splitter.feed(chunk):
            if (event := reader.feed(line)) is not None:
                yield event
