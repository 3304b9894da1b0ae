"""The service's one clock. Every time rule reads `now()`, never the database's clock,
so tests can move time with `travel()`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

_offset = timedelta(0)


def now() -> datetime:
    return datetime.now(UTC) + _offset


def advance(delta: timedelta) -> None:
    global _offset
    _offset += delta


def reset() -> None:
    global _offset
    _offset = timedelta(0)


@contextmanager
def travel(delta: timedelta) -> Iterator[None]:
    advance(delta)
    try:
        yield
    finally:
        advance(-delta)


def rfc3339(moment: datetime) -> str:
    """RFC 3339 in UTC with a Z suffix and whole seconds."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="seconds")[:-6] + "Z"  # "+00:00" becomes "Z"
