"""What the race tests share: an app for each way PostgreSQL work runs, and calls released
together from threads, each on its own connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest


@pytest.fixture(params=["inline", "threads"], name="app")
def racing_app(request: pytest.FixtureRequest, make_app, database_url):  # noqa: ANN001
    """Both ways PostgreSQL work runs (BROKER_DB_DISPATCH): one writer at a time per process,
    or several transactions at once in one process, racing in the database itself. Import
    it into a test module to give its tests this `app`."""
    if request.param == "threads" and database_url.startswith("sqlite"):
        pytest.skip("SQLite's work always runs inline")
    return make_app(db_dispatch=request.param)


def all_at_once(calls: list[Callable[[httpx.Client], Any]], base_url: str = "") -> list[Any]:
    """Run the calls in threads released together, each with a client of its own (at
    `base_url`, for calls that give paths only); their results, in the calls' order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    done = [False] * len(calls)

    def run(i: int, call: Callable[[httpx.Client], Any]) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as client:
            barrier.wait()
            results[i] = call(client)
            done[i] = True

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(done), "a racing call raised (its thread printed why)"
    return results
