"""The public documents, each computed at most once per TTL per process: /status.json and
/stats.json are unauthenticated, so a burst of requests costs one computation.
Cached by the service clock, so tests move past a TTL with clock.travel()."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from agent_broker.config import Settings
from agent_broker.meta.stats import stats_document
from agent_broker.meta.status import status_document

STATUS_TTL = timedelta(seconds=30)
STATS_TTL = timedelta(seconds=60)


class DocumentCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[datetime, dict]] = {}

    def last(self, name: str) -> dict | None:
        """The document last computed, however old."""
        with self._lock:
            entry = self._entries.get(name)
        return entry[1] if entry is not None else None

    def get(self, name: str, ttl: timedelta, now: datetime, compute: Callable[[], dict]) -> dict:
        with self._lock:
            entry = self._entries.get(name)
        if entry is not None and entry[0] <= now < entry[0] + ttl:
            return entry[1]
        document = compute()
        with self._lock:
            self._entries[name] = (now, document)
        return document


def status(session: Session, settings: Settings, cache: DocumentCache, *, now: datetime) -> dict:
    return cache.get(
        "status",
        STATUS_TTL,
        now,
        lambda: status_document(session, public_base_url=settings.public_base_url, now=now),
    )


def last_status(settings: Settings, cache: DocumentCache, *, now: datetime) -> dict:
    """/status.json while its samples cannot be read: the last document computed, or one
    with no samples (state no_data) if there is none."""
    return cache.last("status") or status_document(
        None, public_base_url=settings.public_base_url, now=now
    )


def stats(session: Session, cache: DocumentCache, *, now: datetime) -> dict:
    return cache.get("stats", STATS_TTL, now, lambda: stats_document(session, now=now))
