"""Dependency outages during the soak: PostgreSQL restarted once (a third of the way in)
and Redis paused once (two thirds of the way in), each logged as a window of time within
which the service may answer 503 (docs/decisions/outages.md) and outside which it may not.

PostgreSQL: `restart` runs `pg_ctlcluster --skip-systemctl-redirect <version> <cluster>
restart -m fast` (as the server's owner or root; fast mode closes every session, as a
failover does); `terminate` kills every server process of the soak's own database with
pg_terminate_backend, which is what a restart does to the service's open connections
without touching anyone else's (for a shared server). Redis: `pause` sends
`CLIENT PAUSE <ms> ALL`, which Redis lifts by itself when the time is up, even if the soak
dies meanwhile."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from dataclasses import dataclass, field

import psycopg
import redis

POSTGRES_OUTAGES = ("restart", "terminate", "none")
REDIS_OUTAGES = ("pause", "none")
REDIS_PAUSE_S = 6.0
# 503s may still be answered this long after an outage ended: a request that met it is
# answered after its Retry-After, and workers reconnect on their next request.
AFTER_OUTAGE_S = 5.0
READY_DEADLINE_S = 60.0
TERMINATE_FOR_S = 2.0  # about a fast restart's length
PG_CLUSTER = os.environ.get("BENCH_PG_CLUSTER", "15 main").split()


@dataclass(frozen=True)
class Outage:
    kind: str  # "postgres restart", "postgres terminate", "redis pause"
    started: float  # time.monotonic()
    ended: float
    detail: str


@dataclass
class OutageLog:
    outages: list[Outage] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # an outage that could not be caused

    def within(self, moment: float) -> bool:
        """Whether `moment` falls inside an outage or AFTER_OUTAGE_S after one."""
        return any(o.started <= moment <= o.ended + AFTER_OUTAGE_S for o in self.outages)


def _dsn(database_url: str) -> str:
    return database_url.replace("postgresql+psycopg://", "postgresql://", 1)


def _wait_until_ready(database_url: str) -> None:
    deadline = time.monotonic() + READY_DEADLINE_S
    while True:
        try:
            psycopg.connect(_dsn(database_url), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _restart_postgres(database_url: str) -> str:
    result = subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, "restart", "-m", "fast"],
        capture_output=True,
        text=True,
        timeout=READY_DEADLINE_S,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pg_ctlcluster restart: {(result.stderr or result.stdout)[-300:]}")
    _wait_until_ready(database_url)
    return "restarted in fast mode"


def _terminate_backends(database_url: str) -> str:
    """Every session of the soak's database terminated, again and again for
    TERMINATE_FOR_S, as long as a fast restart keeps them from the server."""
    terminated = 0
    until = time.monotonic() + TERMINATE_FOR_S
    with psycopg.connect(_dsn(database_url), autocommit=True) as admin:
        while time.monotonic() < until:
            terminated += len(
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchall()
            )
            time.sleep(0.05)
    return f"{terminated} sessions of the soak's database terminated"


def _pause_redis(redis_url: str) -> str:
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        client.execute_command("CLIENT", "PAUSE", int(REDIS_PAUSE_S * 1000), "ALL")
    finally:
        client.close()
    time.sleep(REDIS_PAUSE_S)
    return f"paused {REDIS_PAUSE_S:g} s"


async def _cause(log: OutageLog, kind: str, action, *args: str) -> None:  # noqa: ANN001
    started = time.monotonic()
    try:
        detail = await asyncio.to_thread(action, *args)
    except Exception as exc:  # noqa: BLE001 - reported as a failed check
        log.failures.append(f"{kind}: {type(exc).__name__}: {exc}"[:300])
        detail = "failed"
    log.outages.append(Outage(kind, started, time.monotonic(), detail))


async def cause_outages(
    postgres: str,
    redis_outage: str,
    database_url: str,
    redis_url: str,
    seconds: float,
    log: OutageLog,
) -> None:
    """The PostgreSQL outage a third of the way into `seconds`, the Redis one two thirds
    of the way in (either "none": skipped)."""
    started = time.monotonic()
    if postgres != "none":
        await asyncio.sleep(seconds / 3)
        if postgres == "restart":
            await _cause(log, "postgres restart", _restart_postgres, database_url)
        else:
            await _cause(log, "postgres terminate", _terminate_backends, database_url)
    if redis_outage != "none":
        await asyncio.sleep(max(0.0, started + 2 * seconds / 3 - time.monotonic()))
        await _cause(log, "redis pause", _pause_redis, redis_url)
