"""The events' statements: the log every account reads, endpoints, the webhook outbox and
its delivery rounds. Prepared (agent_broker.db.prepared): events are written in the
transactions of the negotiation steps they report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Text, bindparam, cast, delete, func, insert, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, dialect_insert, saves_round_trips
from agent_broker.webhooks.models import AccountEvent, WebhookEndpoint, WebhookEvent

_endpoints = WebhookEndpoint.__table__
_events = WebhookEvent.__table__
_log = AccountEvent.__table__

# The log (agent_broker.events reads it).

_LOGGED = ("id", "account_id", "type", "payload", "created_at")


def _xid(value: Any) -> Any:
    """A PostgreSQL xid8 as a bigint (ids of this server's transactions fit)."""
    return cast(cast(value, Text), BigInteger)


def _log_events(count: int) -> Prepared:
    """One statement writing an event into `count` accounts' logs, in the order given (as
    single inserts would): ids and accounts bound as id0, account_id0, ..."""

    def build(dialect_name: str) -> Any:
        rows = []
        for i in range(count):
            values: dict[str, Any] = {
                "id": bindparam(f"id{i}"),
                "account_id": bindparam(f"account_id{i}"),
                **{key: bindparam(key) for key in ("type", "payload", "created_at")},
            }
            if dialect_name == "postgresql":
                values["txid"] = _xid(func.pg_current_xact_id())
            rows.append(values)
        return insert(_log).values(rows)

    return Prepared(build)


def _logged_after(dialect_name: str) -> Any:
    statement = (
        select(_log.c.sequence, _log.c.id, _log.c.type, _log.c.payload)
        .where(_log.c.account_id == bindparam("account_id"), _log.c.sequence > bindparam("after"))
        .order_by(_log.c.sequence)
        .limit(bindparam("limit"))
    )
    if dialect_name == "postgresql":
        # Only events of transactions older than every one still running (models.py says why).
        statement = statement.where(
            _log.c.txid < _xid(func.pg_snapshot_xmin(func.pg_current_snapshot()))
        )
    return statement


# An event goes to one account's log or to both parties' (the two cases there are).
_INSERT_LOGGED = {count: _log_events(count) for count in (1, 2)}
_LOGGED_AFTER = Prepared(_logged_after)
_SEQUENCE_OF = Prepared(
    select(_log.c.sequence).where(
        _log.c.account_id == bindparam("account_id"), _log.c.id == bindparam("event_id")
    )
)


def log_event(
    session: Session,
    *,
    event_ids: dict[str, str],
    event_type: str,
    payload: str,
    now: datetime,
) -> None:
    """Write the event into each account's log (`event_ids`: account id -> event id, in
    the order to write them)."""
    ids = {}
    for i, (account_id, event_id) in enumerate(event_ids.items()):
        ids[f"id{i}"], ids[f"account_id{i}"] = event_id, account_id
    _INSERT_LOGGED[len(event_ids)].queue(
        session, type=event_type, payload=payload, created_at=now, **ids
    )


def logged_after(session: Session, account_id: str, after: int, limit: int) -> list[Any]:
    """The account's events after position `after` (0: from the oldest kept), oldest
    first: (sequence, id, type, payload)."""
    return _LOGGED_AFTER.all(session, account_id=account_id, after=after, limit=limit)


def position_of(session: Session, account_id: str, event_id: str) -> int | None:
    """Where the account's event with this id is in the log; None when it is not one of
    the account's kept events."""
    return _SEQUENCE_OF.scalar(session, account_id=account_id, event_id=event_id)


def forget_events_before(session: Session, before: datetime) -> int:
    result = session.execute(delete(_log).where(_log.c.created_at < before))
    return result.rowcount or 0


# Endpoints.


def _upsert_endpoint(dialect_name: str) -> Any:
    statement = dialect_insert(dialect_name, _endpoints).values(
        account_id=bindparam("account_id"),
        url=bindparam("url"),
        secret=bindparam("secret"),
        created_at=bindparam("now"),
    )
    return statement.on_conflict_do_update(
        index_elements=[_endpoints.c.account_id],
        set_={"url": statement.excluded.url, "secret": statement.excluded.secret},
    )


_SET_ENDPOINT = Prepared(_upsert_endpoint)
_FORGET_ENDPOINT = Prepared(
    delete(_endpoints).where(_endpoints.c.account_id == bindparam("account_id"))
)
_FORGET_EVENTS = Prepared(
    delete(_events).where(
        _events.c.account_id == bindparam("account_id"), _events.c.delivered_at.is_(None)
    )
)


def set_endpoint(
    session: Session, account_id: str, *, url: str, secret: str, now: datetime
) -> None:
    """The account's endpoint, new or replacing its earlier one."""
    _SET_ENDPOINT.execute(session, account_id=account_id, url=url, secret=secret, now=now)


def delete_undelivered_events(session: Session, account_id: str) -> None:
    _FORGET_EVENTS.execute(session, account_id=account_id)


def delete_endpoint(session: Session, account_id: str) -> None:
    _FORGET_ENDPOINT.execute(session, account_id=account_id)


# The outbox.

# Which of the accounts (one or two: an event for both sides of a deal) have an endpoint.
_WITH_ENDPOINT = Prepared(
    select(_endpoints.c.account_id).where(
        _endpoints.c.account_id.in_([bindparam("first"), bindparam("second")])
    )
)
_WRITTEN = ("id", "account_id", "subject", "type", "payload", "created_at", "next_attempt_at")
_INSERT_EVENT = Prepared(insert(_events).values({key: bindparam(key) for key in _WRITTEN}))
# PostgreSQL: the event for an account, written only if the account has an endpoint, the
# lookup and the write in one statement that goes with the transaction's next round trip.
# (On SQLite such an insert that writes nothing costs several times the lookup.)
_INSERT_EVENT_IF_LISTENING = Prepared(
    insert(_events).from_select(
        _WRITTEN,
        select(
            *(
                _endpoints.c.account_id
                if key == "account_id"
                else bindparam(key, type_=_events.c[key].type)
                for key in _WRITTEN
            )
        ).where(_endpoints.c.account_id == bindparam("account_id")),
    )
)


def event_candidates(session: Session, account_ids: tuple[str, ...]) -> tuple[str, ...]:
    """Those of the accounts (one or two) an event may be written for, in the order given:
    the ones with an endpoint, or all of them where insert_event itself writes only for
    an account with an endpoint, at no round trip of its own."""
    if saves_round_trips(session):
        return account_ids
    first, *rest = account_ids
    found = _WITH_ENDPOINT.all(session, first=first, second=rest[0] if rest else first)
    listening = {row.account_id for row in found}
    return tuple(account_id for account_id in account_ids if account_id in listening)


def insert_event(
    session: Session,
    *,
    event_id: str,
    account_id: str,
    subject: str,
    event_type: str,
    payload: str,
    now: datetime,
) -> None:
    """Write an event for one of event_candidates' accounts, due at once (only if the
    account has an endpoint, where event_candidates left that to this write)."""
    statement = _INSERT_EVENT_IF_LISTENING if saves_round_trips(session) else _INSERT_EVENT
    statement.queue(
        session,
        id=event_id,
        account_id=account_id,
        subject=subject,
        type=event_type,
        payload=payload,
        created_at=now,
        next_attempt_at=now,
    )


# Delivery rounds (webhooks.delivery).

BATCH = 200  # at most so many events a round
# The first undelivered event of each subject: the only one of it that may go. One pass
# over the undelivered events (ix_webhook_events_due), whatever the delivered history or
# the queue behind a subject: every account's share needs all of them, not the oldest 200.
_firsts = (
    select(func.min(_events.c.sequence).label("sequence"))
    .where(_events.c.delivered_at.is_(None), _events.c.failed_at.is_(None))
    .group_by(_events.c.account_id, _events.c.subject)
    .subquery()
)
# Those that are due, numbered per account from its oldest (`turn`).
_heads = (
    select(
        _events.c.sequence,
        _events.c.id,
        _events.c.payload,
        _events.c.attempts,
        _endpoints.c.url,
        _endpoints.c.secret,
        func.row_number()
        .over(partition_by=_events.c.account_id, order_by=_events.c.sequence)
        .label("turn"),
    )
    .join(_firsts, _firsts.c.sequence == _events.c.sequence)
    .join(_endpoints, _endpoints.c.account_id == _events.c.account_id)
    .where(_events.c.next_attempt_at <= bindparam("now"))
    .subquery()
)
# A round: up to PER_ACCOUNT of each account's, round-robin (every account's oldest, then
# every account's second...), oldest first within a turn.
_DUE = Prepared(
    select(
        _heads.c.sequence,
        _heads.c.id,
        _heads.c.payload,
        _heads.c.attempts,
        _heads.c.url,
        _heads.c.secret,
    )
    .where(_heads.c.turn <= bindparam("per_account"))
    .order_by(_heads.c.turn, _heads.c.sequence)
    .limit(BATCH)
)
_DELIVERED = Prepared(
    update(_events)
    .where(_events.c.sequence == bindparam("sequence"))
    .values(delivered_at=bindparam("now"), attempts=bindparam("attempts"), last_error=None)
)
_RETRY = Prepared(
    update(_events)
    .where(_events.c.sequence == bindparam("sequence"))
    .values(
        attempts=bindparam("attempts"),
        next_attempt_at=bindparam("next_at"),
        failed_at=bindparam("failed_at"),
        last_error=bindparam("error"),
    )
)


def due_events(session: Session, *, now: datetime, per_account: int) -> list[Any]:
    """A round of due events (sequence, id, payload, attempts, url, secret): up to
    `per_account` of each account's and BATCH in all."""
    return _DUE.all(session, now=now, per_account=per_account)


def mark_delivered(session: Session, sequence: int, *, now: datetime, attempts: int) -> None:
    _DELIVERED.execute(session, sequence=sequence, now=now, attempts=attempts)


def mark_failed_attempt(
    session: Session,
    sequence: int,
    *,
    attempts: int,
    next_at: datetime,
    failed_at: datetime | None,
    error: str | None,
) -> None:
    """Count a failed attempt: the event is tried again at `next_at`, or given up with
    `failed_at`."""
    _RETRY.execute(
        session,
        sequence=sequence,
        attempts=attempts,
        next_at=next_at,
        failed_at=failed_at,
        error=error,
    )
