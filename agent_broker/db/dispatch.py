"""Where blocking database work runs.

On PostgreSQL a route's database work goes to the thread pool so a slow query never
stalls the event loop. On SQLite (one local file, microsecond queries, one writer at a
time) the hand-off to a thread and back costs more than the work itself, and threads
contending for the GIL around every sqlite3 call make it worse; there the work runs
inline on the event loop. `make bench` measures the difference.

Inline work must never wait on the event loop: write requests of one process therefore
take turns at an asyncio gate before their BEGIN IMMEDIATE (Database.write_gate), so the
SQLite lock is only ever contended by other processes or threads (jobs, the CLI), which
need nothing from this loop to release it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

P = ParamSpec("P")
T = TypeVar("T")


def runs_inline(session: Session) -> bool:
    return bool(session.info.get("inline"))


def db_bound(fn: Callable[P, T]) -> Callable[P, Any]:
    """Turn a blocking route or dependency that takes a `session` into an async one that
    runs inline on SQLite and in the thread pool elsewhere. FastAPI reads the original
    signature through functools.wraps."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        session = kwargs.get("session")
        if isinstance(session, Session) and runs_inline(session):
            return fn(*args, **kwargs)
        return await run_in_threadpool(fn, *args, **kwargs)

    return run
