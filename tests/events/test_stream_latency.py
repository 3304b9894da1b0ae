"""The event stream as an agent on a laptop lives with it: each event arrives within a
second of its cause, and a stream dropped in the middle resumes with Last-Event-ID without
losing or repeating one. Timed, so run alone (serial): on PostgreSQL a reader waits for
every older writing transaction on the server, including other tests' ones."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.support.events import event_stream
from tests.support.market import offer, open_thread

pytestmark = pytest.mark.serial

ROUNDS = 6


class Stream:
    """A reader of GET /v1/events/stream in its own thread, noting when each message came;
    it hangs up after `count` messages."""

    def __init__(self, base_url: str, agent, count: int, **headers: str) -> None:  # type: ignore[no-untyped-def]
        self.messages: list[tuple[float, dict[str, str]]] = []
        self.open = threading.Event()
        self._thread = threading.Thread(
            target=self._read, args=(base_url, agent, count, headers), daemon=True
        )
        self._thread.start()
        assert self.open.wait(10), "the stream did not open"

    def _read(self, base_url: str, agent, count: int, headers: dict) -> None:  # type: ignore[no-untyped-def]
        with event_stream(base_url, agent, **headers) as response:
            assert response.status_code == 200
            fields: dict[str, str] = {}
            for line in response.iter_lines():
                if line.startswith(": events"):
                    self.open.set()
                if line == "":
                    if "data" in fields:
                        self.messages.append((time.monotonic(), fields))
                        if len(self.messages) == count:
                            return
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")

    def join(self) -> list[tuple[float, dict[str, str]]]:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), f"only {len(self.messages)} messages came"
        return self.messages


def test_each_event_arrives_within_a_second_of_its_cause(live_server, market):
    with httpx.Client(base_url=live_server, timeout=30) as http:
        thread = open_thread(http, market.opener, market.listing_id).json()["id"]
        stream = Stream(live_server, market.opener, ROUNDS)
        caused = []
        for n in range(ROUNDS):
            # The poster's offer is the opener's event; the opener answers off the clock.
            response = offer(http, market.poster, thread, f"round {n}")
            caused.append(time.monotonic())
            assert response.status_code == 200, response.text
            time.sleep(0.3)
            assert offer(http, market.opener, thread, f"answer {n}").status_code == 200
        received = stream.join()
    latencies = [arrived - cause for (arrived, _), cause in zip(received, caused, strict=True)]
    assert [m["event"] for _, m in received] == ["thread.offer"] * ROUNDS
    assert max(latencies) < 1.0, latencies


def test_a_dropped_stream_resumes_without_losing_or_repeating_an_event(live_server, market):
    with httpx.Client(base_url=live_server, timeout=30) as http:
        thread = open_thread(http, market.opener, market.listing_id).json()["id"]

        def round_trip(n: int) -> None:
            assert offer(http, market.poster, thread, f"p{n}").status_code == 200
            assert offer(http, market.opener, thread, f"o{n}").status_code == 200

        first = Stream(live_server, market.opener, 2)
        round_trip(0)
        round_trip(1)
        before = [m for _, m in first.join()]  # hung up after two
        round_trip(2)  # written while nobody listens
        round_trip(3)
        resumed = Stream(live_server, market.opener, 2, **{"Last-Event-ID": before[-1]["id"]})
        after = [m for _, m in resumed.join()]
        page = http.get("/v1/events", headers=market.opener.headers).json()
    every = [event["id"] for event in page["events"] if event["type"] == "thread.offer"]
    seen = [m["id"] for m in before + after]
    assert seen == every and len(set(seen)) == 4
    assert [m["data"].count(f"p{n}") for n, m in enumerate(before + after)] == [1] * 4
