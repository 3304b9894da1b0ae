"""The idempotency records' statements (prepared: a keyed call claims its key on every
request)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, dialect_insert
from agent_broker.idempotency.models import IdempotencyRecord

_records = IdempotencyRecord.__table__
_FIND = Prepared(
    select(
        _records.c.id,
        _records.c.request_hash,
        _records.c.response_status,
        _records.c.response_body,
        _records.c.created_at,
    ).where(
        _records.c.scope == bindparam("scope"),
        _records.c.route == bindparam("route"),
        _records.c.key == bindparam("key"),
    )
)
# INSERT ... ON CONFLICT DO NOTHING on both databases: a concurrent claim of the
# same key makes this wait on the unique index until that claim commits or rolls back,
# then insert nothing (no row returned) or insert, without a savepoint around it.
_CLAIM = Prepared(
    lambda dialect: (
        dialect_insert(dialect, _records)
        .values(
            scope=bindparam("scope"),
            route=bindparam("route"),
            key=bindparam("key"),
            request_hash=bindparam("request_hash"),
            response_status=0,
            response_body="",
            created_at=bindparam("now"),
        )
        .on_conflict_do_nothing()
        .returning(_records.c.id)
    )
)
_ANSWER = Prepared(
    update(_records)
    .where(_records.c.id == bindparam("id"))
    .values(response_status=bindparam("status"), response_body=bindparam("body"))
)
_FORGET = Prepared(delete(_records).where(_records.c.id == bindparam("id")))


def claim(
    session: Session, *, scope: str, route: str, key: str, request_hash: str, now: datetime
) -> int | None:
    """Insert the key's record, with no answer yet; its id, or None when the key is taken."""
    return _CLAIM.scalar(
        session, scope=scope, route=route, key=key, request_hash=request_hash, now=now
    )


def find(session: Session, *, scope: str, route: str, key: str) -> Any:
    """The key's record (id, request_hash, response_status, response_body, created_at), or
    None."""
    return _FIND.one_or_none(session, scope=scope, route=route, key=key)


def answer(session: Session, record_id: int, *, status: int, body: str) -> None:
    """Keep the answer in the claimed record."""
    _ANSWER.queue(session, id=record_id, status=status, body=body)


def forget(session: Session, record_id: int) -> None:
    _FORGET.execute(session, id=record_id)
