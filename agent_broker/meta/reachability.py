"""Whether this process reaches the database and Redis now: what /health and /status.json
report (docs/decisions/outages.md), asked at most once a PROBE_EVERY_S per process, so a
load balancer polling /health costs the database one `SELECT 1` a second per worker.

Each probe runs on a thread and is waited for at most PROBE_TIMEOUT_S: a server that does
not answer is unreachable, and never holds up the event loop. The database probe takes a
connection from the pool beyond the requests' session slots (as the metrics' reads do),
so it answers even while every request slot waits on the database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Literal

import anyio.to_thread
import redis
from sqlalchemy import text

from agent_broker.config import Settings
from agent_broker.db.dispatch import PerLoop
from agent_broker.db.engine import Database

PROBE_EVERY_S = 1.0
PROBE_TIMEOUT_S = 2.0

State = Literal["reachable", "unreachable", "not_configured"]


class Reachability:
    def __init__(self, db: Database, settings: Settings) -> None:
        self._db = db
        self._redis_url = settings.redis_url
        self._redis: redis.Redis | None = None
        self._found: dict[str, State] | None = None
        self._found_at = 0.0
        self._lock: PerLoop[asyncio.Lock] = PerLoop(asyncio.Lock)

    async def now(self) -> dict[str, State]:
        """{"database": ..., "redis": ...}, each "reachable" or "unreachable" (Redis
        "not_configured" without BROKER_REDIS_URL), at most PROBE_EVERY_S old."""
        async with self._lock.get():
            if self._found is None or time.monotonic() - self._found_at >= PROBE_EVERY_S:
                database, shared = await asyncio.gather(
                    self._probe(self._database), self._probe(self._redis_ping)
                )
                self._found = {
                    "database": database,
                    "redis": shared if self._redis_url else "not_configured",
                }
                self._found_at = time.monotonic()
            return dict(self._found)

    async def _probe(self, check: Callable[[], None]) -> State:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
        except Exception:  # noqa: BLE001 - any failure, a timeout too, is the finding
            return "unreachable"
        return "reachable"

    def _database(self) -> None:
        with self._db.reader() as session:
            session.execute(text("SELECT 1")).scalar_one()

    def _redis_ping(self) -> None:
        if not self._redis_url:
            return
        if self._redis is None:
            self._redis = redis.Redis.from_url(
                self._redis_url,
                socket_timeout=PROBE_TIMEOUT_S,
                socket_connect_timeout=PROBE_TIMEOUT_S,
            )
        self._redis.ping()
