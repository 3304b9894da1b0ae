"""More concurrent requests than the connection pool holds: on PostgreSQL each request's
database work hops between the event loop and the thread pool, so a request must not take
a thread while no connection is free for it (every thread would then wait for a
connection, and every connection's holder for a thread). Requests wait for a session slot
on the event loop instead, and all of them are answered."""

from __future__ import annotations

import asyncio
import time

import httpx

from tests.support.accounts import register
from tests.support.http import serving

# Above the thread pool's 40 tokens plus the pool's capacity below (1 + 20 overflow).
CONCURRENT = 90


def test_a_burst_larger_than_the_pool_is_answered_in_full(make_app):
    app = make_app(db_pool_size=1)
    with serving(app) as (base, _port):
        with httpx.Client(base_url=base) as client:
            key = register(client).api_key

        async def burst() -> list[int]:
            limits = httpx.Limits(max_connections=CONCURRENT)
            async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
                responses = await asyncio.gather(
                    *(
                        client.get("/v1/account", headers={"x-api-key": key})
                        for _ in range(CONCURRENT)
                    )
                )
            return [r.status_code for r in responses]

        started = time.monotonic()
        statuses = asyncio.run(burst())
        elapsed = time.monotonic() - started
    assert statuses == [200] * CONCURRENT
    # The pool's 30 s checkout timeout is what a stall would end in.
    assert elapsed < 20
