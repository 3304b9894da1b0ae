"""Your events as iterators: pages read by long-poll (GET /v1/events), or the Server-Sent
Events stream (GET /v1/events/stream), reconnected with Last-Event-ID whenever the service
ends it. Both yield the same `EventOut` (id, type, timestamp, data)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field

from agent_broker_client.errors import problem_of
from agent_broker_client.models import EventOut

STREAM_PATH = "/v1/events/stream"
LONGEST_WAIT = 25  # seconds: what the service allows a long-poll


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


def messages(lines: Iterable[str]) -> Iterator[EventOut]:
    reader = MessageReader()
    for line in lines:
        if (event := reader.feed(line)) is not None:
            yield event


async def amessages(lines: AsyncIterator[str]) -> AsyncIterator[EventOut]:
    reader = MessageReader()
    async for line in lines:
        if (event := reader.feed(line)) is not None:
            yield event
