"""Where a request's database work runs (agent_broker.db.dispatch, BROKER_DB_DISPATCH):
inline on the event loop, always on SQLite and by default on PostgreSQL, with the
process's writers taking turns; or, on PostgreSQL with `threads`, on a few threads per
worker with several write transactions open at once."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from agent_broker.db.dispatch import run
from agent_broker.db.session import ReadSession, WriteSession
from tests.support.http import serving

HELD_S = 0.3  # how long each probe keeps its write transaction open
WRITERS = 3


def _probe(app: FastAPI) -> list[tuple[float, float]]:
    """Routes reporting where their database work ran and when their write transactions
    were open."""
    spans: list[tuple[float, float]] = []

    @app.get("/test/where")
    async def where(session: ReadSession) -> dict:
        loop_thread = threading.get_ident()
        worked_on = await run(session, threading.get_ident)
        return {"inline": worked_on == loop_thread}

    @app.post("/test/hold-write")
    async def hold_write(session: WriteSession) -> dict:
        await run(session, lambda: session.execute(text("SELECT 1")).scalar_one())
        began = time.monotonic()
        await asyncio.sleep(HELD_S)  # the transaction stays open across the wait
        spans.append((began, time.monotonic()))
        return {}

    return spans


def _overlaps(spans: list[tuple[float, float]]) -> int:
    ordered = sorted(spans)
    return sum(1 for (_, end), (start, _) in zip(ordered, ordered[1:], strict=False) if start < end)


def _concurrent_writes(app: FastAPI) -> None:
    with serving(app) as (base, _port):

        async def burst() -> list[int]:
            async with httpx.AsyncClient(base_url=base, timeout=30) as client:
                answers = await asyncio.gather(
                    *(client.post("/test/hold-write") for _ in range(WRITERS))
                )
            return [a.status_code for a in answers]

        assert asyncio.run(burst()) == [200] * WRITERS


def _inline(app: FastAPI) -> bool:
    with serving(app) as (base, _port):
        return httpx.get(f"{base}/test/where").json()["inline"]


def test_database_work_runs_inline_and_writers_take_turns_by_default(app):
    spans = _probe(app)
    assert _inline(app)
    _concurrent_writes(app)
    assert len(spans) == WRITERS
    # One write transaction at a time in a process: none opened before the last ended.
    assert _overlaps(spans) == 0


def test_threads_dispatch_runs_postgresql_work_on_threads_with_writers_together(
    make_app, database_url
):
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite's work always runs inline (one writer per database)")
    app = make_app(db_dispatch="threads")
    spans = _probe(app)
    assert not _inline(app)
    _concurrent_writes(app)
    assert len(spans) == WRITERS
    assert _overlaps(spans) == WRITERS - 1


def test_sqlite_ignores_threads_dispatch(make_app, database_url):
    if not database_url.startswith("sqlite"):
        pytest.skip("about SQLite")
    app = make_app(db_dispatch="threads")
    spans = _probe(app)
    assert _inline(app)
    _concurrent_writes(app)
    assert _overlaps(spans) == 0
