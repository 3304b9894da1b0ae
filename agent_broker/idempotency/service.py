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

from sqlalchemy import delete
from sqlalchemy.orm import Session

from agent_broker.idempotency import repository
from agent_broker.idempotency.models import IdempotencyRecord
from agent_broker.problems import IdempotencyKeyReuse, InvalidInput


@dataclass(frozen=True)
class _Kept:
    request_hash: str
    response_status: int
    response_body: str


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
    # Claim first: a new key (the usual case) costs one statement. Only a key already
    # taken is looked up: an earlier call's answer to replay, a concurrent call that has
    # just committed, or a record past retention, which is forgotten and claimed afresh.
    claim_id = _claim(session, scope, key, now)
    if claim_id is None:
        record = _claimed(session, scope, key, now)
        if record is not None:
            return replayed(_kept(record, key))
        claim_id = _claim(session, scope, key, now)
        if claim_id is None:
            raise RuntimeError("an idempotency key was neither claimable nor claimed")
    outcome = compute()
    repository.answer(
        session,
        claim_id,
        status=outcome.status,
        body=json.dumps(stored(outcome.body), separators=(",", ":")),
    )
    return outcome


def _claim(session: Session, scope: str, key: IdempotencyKey, now: datetime) -> int | None:
    """Insert the key's record; its id, or None when the key is already taken."""
    return repository.claim(
        session,
        scope=scope,
        route=key.operation,
        key=key.key,
        request_hash=key.fingerprint,
        now=now,
    )


def _claimed(session: Session, scope: str, key: IdempotencyKey, now: datetime) -> _Kept | None:
    record = repository.find(session, scope=scope, route=key.operation, key=key.key)
    if record is None:
        return None
    if record.created_at <= now - key.retention:
        # Past retention the key is forgotten and may be used afresh.
        repository.forget(session, record.id)
        return None
    return _Kept(record.request_hash, record.response_status, record.response_body)


def _kept(record: _Kept, key: IdempotencyKey) -> Outcome:
    if record.request_hash != key.fingerprint:
        raise IdempotencyKeyReuse()
    return Outcome(record.response_status, json.loads(record.response_body), replayed=True)


def purge_expired(session: Session, retention_hours: int, *, now: datetime) -> int:
    cutoff = now - timedelta(hours=retention_hours)
    result = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at <= cutoff)
    )
    return result.rowcount or 0
