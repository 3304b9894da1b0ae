"""Reading an account's events (the log agent_broker.webhooks writes): a page after a
cursor, a page that waits for the first event (long-poll), and an endless stream.

Readers poll the database, so an event written by any worker (or by a job) reaches a
reader held on any other; each read is a short transaction of its own, and nothing is
held between reads. A cursor is an event id the account was given; an id that is not
one of the account's kept events is refused rather than read as "from the start"."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.problems import InvalidInput
from agent_broker.webhooks import repository

MAX_WAIT_SECONDS = 25
PAGE_LIMIT = 100
# How often a waiting reader looks again: an event reaches a reader within about this long.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Logged:
    position: int
    id: str
    type: str
    body: str  # the webhook body, as sent: {"type", "timestamp", "data"}

    def document(self) -> dict[str, Any]:
        return {"id": self.id, **json.loads(self.body)}


class UnknownCursor(InvalidInput):
    default_detail = (
        "No such event among yours: it was never one of your events or it is past the "
        "retention (BROKER_EVENT_RETENTION_HOURS). Read again without a cursor to start "
        "from your oldest kept event."
    )


async def _read(db: Database, work: Any, *args: Any) -> Any:
    async with transaction(db, write=False) as session:
        return await run(session, work, session, *args)


def _position(session: Session, account_id: str, cursor: str | None) -> int:
    if cursor is None:
        return 0
    position = repository.position_of(session, account_id, cursor)
    if position is None:
        raise UnknownCursor()
    return position


def _after(session: Session, account_id: str, position: int, limit: int) -> list[Logged]:
    rows = repository.logged_after(session, account_id, position, limit)
    return [Logged(row.sequence, row.id, row.type, row.payload) for row in rows]


async def position_of(db: Database, account_id: str, cursor: str | None) -> int:
    return await _read(db, _position, account_id, cursor)


async def page(
    db: Database, account_id: str, cursor: str | None, *, limit: int, wait_seconds: float
) -> dict[str, Any]:
    """`{events, next}`: the account's events after the cursor, oldest first, waiting up to
    `wait_seconds` for the first one; `next` is the cursor to read on from (the one given
    when there was nothing new)."""
    position = await position_of(db, account_id, cursor)
    deadline = time.monotonic() + wait_seconds
    while True:
        found = await _read(db, _after, account_id, position, limit)
        left = deadline - time.monotonic()
        if found or left <= 0:
            break
        await asyncio.sleep(min(POLL_SECONDS, left))
    return {
        "events": [event.document() for event in found],
        "next": found[-1].id if found else cursor,
    }


async def follow(
    db: Database, account_id: str, position: int, *, for_seconds: float
) -> AsyncIterator[Logged]:
    """Every event after `position`, as it is written, until the reader goes away or
    `for_seconds` have passed."""
    deadline = time.monotonic() + for_seconds
    while True:
        found = await _read(db, _after, account_id, position, PAGE_LIMIT)
        for event in found:
            yield event
        if found:
            position = found[-1].position
        left = deadline - time.monotonic()
        if left <= 0:
            return
        if len(found) < PAGE_LIMIT:
            await asyncio.sleep(min(POLL_SECONDS, left))


def forget_expired(session: Session, retention_hours: int, *, now: datetime) -> int:
    return repository.forget_events_before(session, now - timedelta(hours=retention_hours))
