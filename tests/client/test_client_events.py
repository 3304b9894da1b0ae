"""The clients' event iterators against a live server: pages by long-poll (read up, or
followed as events are written) and the Server-Sent Events stream, reopened after the
last event seen when the service ends it; blocking and asyncio alike."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agent_broker.client import AsyncClient, Client, InvalidInput
from tests.support.market import open_thread


@pytest.fixture
def app(make_app):
    # Short streams, so the test sees the client reopen one.
    return make_app(event_stream_seconds=1)


def _opened(live_server, market, times: int, **fields: str) -> list[str]:
    import httpx

    with httpx.Client(base_url=live_server, timeout=30) as http:
        made = [open_thread(http, market.opener, market.listing_id, **fields) for _ in range(times)]
    assert all(response.status_code == 201 for response in made)
    return [response.json()["id"] for response in made]


def test_events_read_up_then_followed(live_server, market):
    first = _opened(live_server, market, 1)
    with Client(live_server, market.poster.api_key) as client:
        # A first page by long-poll: on PostgreSQL an event waits for every older writing
        # transaction of the server (another test's, say) to end.
        read = client.events_page(wait=10).events
        assert [(e.type, e.data["thread_id"]) for e in read] == [("thread.opened", first[0])]
        assert list(client.events(read[-1].id, follow=False)) == []

        got = []

        def follow() -> None:
            for event in client.events(read[-1].id, wait=5):
                got.append(event)
                return

        reader = threading.Thread(target=follow)
        reader.start()
        time.sleep(0.5)
        second = _opened(live_server, market, 1)
        reader.join(timeout=30)
    assert [e.data["thread_id"] for e in got] == second


def test_the_stream_is_reopened_after_the_last_event_seen(live_server, market):
    first = _opened(live_server, market, 1)
    got = []

    def listen() -> None:
        with Client(live_server, market.poster.api_key) as client:
            for event in client.stream_events():
                got.append(event)
                if len(got) == 2:
                    return

    reader = threading.Thread(target=listen)
    reader.start()
    time.sleep(2.5)  # the service has ended the first stream (1 s) by now
    second = _opened(live_server, market, 1)
    reader.join(timeout=30)
    # Each once, in order, across the reconnection.
    assert [e.data["thread_id"] for e in got] == first + second


def test_the_async_client_iterates_alike(live_server, market):
    opened = _opened(live_server, market, 2)

    async def read() -> tuple[list, list]:
        async with AsyncClient(live_server, market.poster.api_key) as client:
            paged = (await client.events_page(wait=10)).events
            paged += [event async for event in client.events(paged[-1].id, follow=False)]
            streamed = []
            async for event in client.stream_events():
                streamed.append(event)
                if len(streamed) == 2:
                    break
            return paged, streamed

    paged, streamed = asyncio.run(read())
    assert [e.data["thread_id"] for e in paged] == opened
    assert [e.id for e in streamed] == [e.id for e in paged]


# Line ends to str.splitlines (and so to httpx's iter_lines), not to an event stream: the
# server writes them as they are in a `data:` line.
UNUSUAL = "Two days\u2028then delivery\x85for $2.50"


def test_a_diff_with_unicode_line_separators_streams_intact(live_server, market):
    _opened(live_server, market, 1, diff=UNUSUAL)
    with Client(live_server, market.poster.api_key) as client:
        event = next(client.stream_events())
    assert event.data["diff"] == UNUSUAL


def test_the_async_client_streams_such_a_diff_intact(live_server, market):
    _opened(live_server, market, 1, diff=UNUSUAL)

    async def first():  # type: ignore[no-untyped-def]
        async with AsyncClient(live_server, market.poster.api_key) as client:
            async for event in client.stream_events():
                return event

    assert asyncio.run(first()).data["diff"] == UNUSUAL


def test_an_unknown_cursor_raises_the_typed_problem(live_server, market):
    with Client(live_server, market.poster.api_key) as client:
        with pytest.raises(InvalidInput) as refused:
            list(client.events("msg_nope", follow=False))
        assert refused.value.reason == "invalid_input"
        with pytest.raises(InvalidInput):
            next(client.stream_events("msg_nope"))
