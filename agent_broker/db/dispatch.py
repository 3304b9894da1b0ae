"""Where blocking database work runs.

Inline, on the event loop: always on SQLite (one local file, microsecond queries, one
writer at a time), where the hand-off to a thread and back costs more than the work
itself; and by default on PostgreSQL (BROKER_DB_DISPATCH=inline), where a deal cycle makes
some seventy round trips and the hops to a thread and back (three per request), with the
threads' turns for the interpreter lock, cost more than overlapping the round trips gave.
With a few workers per core, a worker that waits on a round trip leaves the CPU to the
others and to PostgreSQL: the deal cycle with two workers went from about 70 to about 105
sealed deals a second (make bench; one worker does less, so run at least two).
BROKER_DB_DISPATCH=threads runs PostgreSQL work on a few threads per worker instead,
several write transactions at once in one worker; it suits one worker on a machine with
cores to spare.

Inline work must never wait on the event loop: write requests of one process therefore
take turns at an asyncio gate before their transaction begins (Database.write_gate), so
a lock (SQLite's write lock, a PostgreSQL row lock) is only ever contended by other
processes or threads (other workers, jobs, the CLI), which need nothing from this loop to
release it. Readers take no locks, so they need no turn."""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

P = ParamSpec("P")
T = TypeVar("T")


# Session info key: the PerLoop limiter of the threads request sessions' work runs on.
THREADS = "threads"


class PerLoop(Generic[T]):
    """One object per event loop, made there on first use: asyncio locks and semaphores
    and anyio limiters belong to the loop they are used on."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        made = self._by_loop.get(loop)
        if made is None:
            made = self._by_loop[loop] = self._make()
        return made


def runs_inline(session: Session) -> bool:
    return bool(session.info.get("inline"))


async def in_thread(owner: Session, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a session's blocking work on its own few threads, not the shared pool of 40: the
    threads take turns for the GIL, and dozens of them contending cost more CPU than the
    work (PostgreSQL deal cycle: 36 deals/s with 40 threads, 47 with 4). There is always
    one thread more than request sessions (Database.session_slots), so a session waiting
    in the database for another's lock never keeps that other from its next step."""
    threads: PerLoop[CapacityLimiter] | None = owner.info.get(THREADS)
    call = functools.partial(fn, *args, **kwargs)
    if threads is None:
        return await run_in_threadpool(call)
    return await anyio.to_thread.run_sync(call, limiter=threads.get())


async def run(session: Session, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`, blocking work of `session`, where that session's work runs:
    inline on SQLite, on its threads elsewhere."""
    if runs_inline(session):
        return fn(*args, **kwargs)
    return await in_thread(session, fn, *args, **kwargs)


def db_bound(fn: Callable[P, T]) -> Callable[P, Any]:
    """Turn a blocking route or dependency that takes a `session` into an async one that
    runs inline on SQLite and in the thread pool elsewhere. FastAPI reads the original
    signature through functools.wraps."""

    @functools.wraps(fn)
    async def bound(*args: P.args, **kwargs: P.kwargs) -> T:
        session = kwargs.get("session")
        if isinstance(session, Session):
            return await run(session, fn, *args, **kwargs)
        return await run_in_threadpool(fn, *args, **kwargs)

    return bound
