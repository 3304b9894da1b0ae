"""Runs jobs under a lease so only one replica runs a given job at a time, and (in
`serve`) on their schedule."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

import structlog
from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError

from agent_broker import clock
from agent_broker.db.engine import Database
from agent_broker.http.context import AppContext
from agent_broker.jobs.models import LEASE_TTL, JobLease
from agent_broker.jobs.registry import JOBS, Job

log = structlog.get_logger("agent_broker.jobs")
# Told about every run this process made: (job name, "ok" or "failed", seconds).
JobObserver = Callable[[str, str, float], None]


def holder_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def _ensure_rows(db: Database) -> None:
    for name in JOBS:
        with db.writer() as session:
            if session.get(JobLease, name) is None:
                session.add(JobLease(name=name))
                try:
                    session.commit()
                except IntegrityError:
                    session.rollback()


def _claim(db: Database, job: Job, holder: str, *, only_if_due: bool) -> bool:
    now = clock.now()
    leases = JobLease.__table__
    stmt = (
        update(leases)
        .where(leases.c.name == job.name)
        .where(or_(leases.c.lease_until.is_(None), leases.c.lease_until <= now))
        .values(holder=holder, lease_until=now + LEASE_TTL, last_started_at=now)
    )
    if only_if_due:
        stmt = stmt.where(
            or_(leases.c.last_started_at.is_(None), leases.c.last_started_at <= now - job.period)
        )
    with db.writer() as session:
        claimed = session.execute(stmt).rowcount == 1
        session.commit()
    return claimed


def _finish(db: Database, job: Job, holder: str, outcome: str) -> None:
    leases = JobLease.__table__
    with db.writer() as session:
        session.execute(
            update(leases)
            .where(leases.c.name == job.name, leases.c.holder == holder)
            .values(lease_until=None, last_finished_at=clock.now(), last_outcome=outcome[:500])
        )
        session.commit()


def run_job(
    context: AppContext,
    name: str,
    *,
    only_if_due: bool = False,
    observer: JobObserver | None = None,
) -> str | None:
    """Run one job once. Returns its outcome, or None when another runner holds the lease
    (or, with only_if_due, when its period has not elapsed)."""
    job = JOBS[name]
    db, settings = context.db, context.settings
    _ensure_rows(db)
    holder = holder_id()
    if not _claim(db, job, holder, only_if_due=only_if_due):
        return None
    started = time.perf_counter()
    try:
        with db.writer() as session:
            outcome = job.run(session, settings, clock.now())
            session.commit()
    except Exception as exc:
        outcome = f"failed: {type(exc).__name__}"
        log.error("job_failed", job=name, error_type=type(exc).__name__)
        _finish(db, job, holder, outcome)
        if observer:
            observer(name, "failed", time.perf_counter() - started)
        raise
    _finish(db, job, holder, outcome)
    log.info("job_ran", job=name, outcome=outcome)
    if observer:
        observer(name, "ok", time.perf_counter() - started)
    return outcome


class Scheduler:
    """A daemon thread inside `serve` that runs each job when its period has elapsed."""

    def __init__(
        self,
        context: AppContext,
        tick_seconds: float | None = None,
        observer: JobObserver | None = None,
    ) -> None:
        self._context, self._observer = context, observer
        self._tick = context.settings.jobs_tick_seconds if tick_seconds is None else tick_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="broker-jobs", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.wait(self._tick):
            for name in JOBS:
                if self._stop.is_set():
                    return
                try:
                    run_job(self._context, name, only_if_due=True, observer=self._observer)
                except Exception:  # noqa: BLE001 - logged in run_job; keep the loop alive
                    continue
