"""Idempotency-Key without HTTP: any front door (the REST routes, and later A2A or MCP)
names the operation and its arguments, and the same call with the same key replays the
first answer, whichever door it came through.

The key is scoped to the caller and the operation. The first call claims the key by
inserting its record inside the caller's own transaction, so the record and the effect
commit together, and a refusal (which rolls back) leaves the key free for a corrected
retry. A concurrent duplicate blocks on the unique index until the first commits, then
replays its answer; the effect happens once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agent_broker.idempotency.models import IdempotencyRecord
from agent_broker.problems import IdempotencyKeyReuse, InvalidInput

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class Outcome:
    """What an operation answered: a status code and a JSON-ready body."""

    status: int
    body: Any
    replayed: bool = False


@dataclass(frozen=True)
class IdempotencyKey:
    """A caller's key for one operation, with the fingerprint of the call it came with."""

    key: str
    operation: str  # e.g. "POST /v1/listings/{listing_id}/threads"
    fingerprint: str
    retention: timedelta


def checked_key(raw: str) -> str:
    """Any key of 1 to 255 printable ASCII characters (UUIDs, `e2e-post-<timestamp>`...)."""
    if not raw or len(raw) > MAX_KEY_LENGTH or not all(" " <= c <= "~" for c in raw):
        raise InvalidInput(
            f"The {HEADER} must be 1 to {MAX_KEY_LENGTH} printable ASCII characters."
        )
    return raw


def fingerprint(operation: str, arguments: Any) -> str:
    """A digest of the call: the operation and its arguments (path values and body) in a
    canonical JSON form, so key order and spacing of a resent body do not matter."""
    canonical = json.dumps(
        [operation, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def run_once(
    session: Session,
    scope: str,
    key: IdempotencyKey | None,
    compute: Callable[[], Outcome],
    *,
    now: datetime,
    stored: Callable[[Any], Any] = lambda body: body,
    replayed: Callable[[Outcome], Outcome] = lambda kept: kept,
) -> Outcome:
    """Compute once per key; a later identical call gets the first answer again.

    `stored` chooses what of the body is kept (never a secret); `replayed` turns a kept
    answer into the replay (for example re-rendering a deal package from its id)."""
    if key is None:
        return compute()
    record = _claimed(session, scope, key, now)
    if record is not None:
        return replayed(_kept(record, key))
    claim = IdempotencyRecord(
        scope=scope,
        route=key.operation,
        key=key.key,
        request_hash=key.fingerprint,
        response_status=0,
        response_body="",
        created_at=now,
    )
    try:
        with session.begin_nested():
            session.add(claim)
            session.flush()
    except IntegrityError:
        # A concurrent call with this key committed first: answer as it did.
        record = _claimed(session, scope, key, now)
        if record is None:
            raise
        return replayed(_kept(record, key))
    outcome = compute()
    claim.response_status = outcome.status
    claim.response_body = json.dumps(stored(outcome.body), separators=(",", ":"))
    session.flush()
    return outcome


def _claimed(
    session: Session, scope: str, key: IdempotencyKey, now: datetime
) -> IdempotencyRecord | None:
    record = session.scalars(
        select(IdempotencyRecord)
        .where(
            IdempotencyRecord.scope == scope,
            IdempotencyRecord.route == key.operation,
            IdempotencyRecord.key == key.key,
        )
        .execution_options(populate_existing=True)
    ).one_or_none()
    if record is not None and record.created_at <= now - key.retention:
        # Past retention the key is forgotten and may be used afresh.
        session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id == record.id))
        session.flush()
        return None
    return record


def _kept(record: IdempotencyRecord, key: IdempotencyKey) -> Outcome:
    if record.request_hash != key.fingerprint:
        raise IdempotencyKeyReuse()
    return Outcome(record.response_status, json.loads(record.response_body), replayed=True)


def purge_expired(session: Session, retention_hours: int, *, now: datetime) -> int:
    cutoff = now - timedelta(hours=retention_hours)
    result = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at <= cutoff)
    )
    return result.rowcount or 0
