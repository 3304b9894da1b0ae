"""The service probing its own health: the `health-sample` job records one sample per run
and purges samples past retention; /status.json is derived from them.

A sample passes when every check passes:
- database: a round trip (`SELECT 1`) through the job's own session answers, within
  SLOW_DATABASE_MS;
- redis (only when BROKER_REDIS_URL is set): the shared rate-limit store answers PING.

The detail names failed checks with the exception's class only, never its message (a
driver's message can quote a connection string)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from sqlalchemy import delete, text
from sqlalchemy.orm import Session

from agent_broker.config import Settings
from agent_broker.meta.models import HealthSample

PERIOD = timedelta(minutes=5)
RETENTION = timedelta(days=31)
SLOW_DATABASE_MS = 1000.0
REDIS_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Probe:
    ok: bool
    detail: str


def _check_database(session: Session) -> str | None:
    started = time.perf_counter()
    try:
        session.execute(text("SELECT 1")).scalar_one()
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        session.rollback()
        return f"database: {type(exc).__name__}"
    elapsed_ms = (time.perf_counter() - started) * 1000
    if elapsed_ms > SLOW_DATABASE_MS:
        return f"database: slow ({elapsed_ms:.0f} ms)"
    return None


def _check_redis(url: str) -> str | None:
    client = redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
    )
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001
        return f"redis: {type(exc).__name__}"
    finally:
        client.close()
    return None


def probe(session: Session, settings: Settings) -> Probe:
    # Redis first, before the session's first statement opens its transaction: no network
    # wait inside a transaction (on SQLite, the job's would hold the write lock meanwhile).
    redis_failure = _check_redis(settings.redis_url) if settings.redis_url else None
    failures = [_check_database(session), redis_failure]
    found = [f for f in failures if f]
    return Probe(ok=not found, detail="; ".join(found)[:200] if found else "ok")


def record_sample(session: Session, settings: Settings, *, now: datetime) -> Probe:
    result = probe(session, settings)
    session.add(HealthSample(taken_at=now, ok=result.ok, detail=result.detail))
    session.flush()
    return result


def purge_old(session: Session, *, now: datetime) -> int:
    return session.execute(
        delete(HealthSample).where(HealthSample.taken_at < now - RETENTION)
    ).rowcount


def sample_job(session: Session, settings: Settings, now: datetime) -> str:
    """The `health-sample` job."""
    result = record_sample(session, settings, now=now)
    purged = purge_old(session, now=now)
    verdict = "ok" if result.ok else f"failed ({result.detail})"
    return f"health {verdict}; purged {purged} old samples"
