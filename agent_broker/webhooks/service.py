"""Webhook endpoints and the event outbox.

`PUT /v1/account/webhook {url}` sets the endpoint and answers a new signing secret, once;
`DELETE` removes it (events still waiting are dropped with it). An event is written only
for an account that has an endpoint, in the same transaction as what it reports, so an
event exists exactly when its cause was committed. Thread events name the thread, the
listing, the terms and whose turn it is, never the counterparty: who it is stays hidden
until a deal seals, as everywhere else."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.db.prepared import Prepared, dialect_insert, saves_round_trips
from agent_broker.http.urls import public_https_url
from agent_broker.webhooks.models import WebhookEndpoint, WebhookEvent

EVENT_TYPES = (
    "thread.opened",
    "thread.offer",
    "thread.closed",
    "thread.auto_closed",
    "deal.sealed",
    "deal.rated",
    "deal.disputed",
    "account.identity_linked",
)

_endpoints = WebhookEndpoint.__table__
_events = WebhookEvent.__table__
# Which of the accounts (one or two: an event for both sides of a deal) have an endpoint.
_WITH_ENDPOINT = Prepared(
    select(_endpoints.c.account_id).where(
        _endpoints.c.account_id.in_([bindparam("first"), bindparam("second")])
    )
)
_FORGET_ENDPOINT = Prepared(
    delete(_endpoints).where(_endpoints.c.account_id == bindparam("account_id"))
)
_FORGET_EVENTS = Prepared(
    delete(_events).where(
        _events.c.account_id == bindparam("account_id"), _events.c.delivered_at.is_(None)
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


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def set_endpoint(session: Session, account_id: str, url: str, *, now: datetime) -> dict:
    # The rules of a deal route, and a host that is a domain name other than localhost
    # (agent_broker.accounts.validation): refused here, once, rather than retried at every
    # delivery. Where the name resolves is checked at each delivery.
    checked = public_https_url(url, "url")
    secret = new_secret()
    _SET_ENDPOINT.execute(session, account_id=account_id, url=checked, secret=secret, now=now)
    return {"url": checked, "secret": secret}


def delete_endpoint(session: Session, account_id: str) -> None:
    _FORGET_EVENTS.execute(session, account_id=account_id)
    _FORGET_ENDPOINT.execute(session, account_id=account_id)


def enqueue(
    session: Session,
    account_id: str,
    event_type: str,
    subject: str,
    data: dict[str, Any],
    *,
    now: datetime,
) -> None:
    """Write the event for the account, if it has an endpoint."""
    _write_events(session, (account_id,), event_type, subject, data, now=now)


def enqueue_for_both(
    session: Session,
    parties: tuple[str, str],
    event_type: str,
    subject: str,
    data: dict[str, Any],
    *,
    now: datetime,
) -> None:
    """Write the event for each of the two accounts that has an endpoint, in the order
    given."""
    _write_events(session, parties, event_type, subject, data, now=now)


def _write_events(
    session: Session,
    account_ids: tuple[str, ...],
    event_type: str,
    subject: str,
    data: dict[str, Any],
    *,
    now: datetime,
) -> None:
    """One event row per account with an endpoint, the payload written out once for all
    of them."""
    assert event_type in EVENT_TYPES, event_type
    queued = saves_round_trips(session)
    if not queued:
        first, *rest = account_ids
        found = _WITH_ENDPOINT.all(session, first=first, second=rest[0] if rest else first)
        listening = {row.account_id for row in found}
        account_ids = tuple(account_id for account_id in account_ids if account_id in listening)
        if not account_ids:
            return
    payload = {"type": event_type, "timestamp": clock.rfc3339(now), "data": data}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    statement = _INSERT_EVENT_IF_LISTENING if queued else _INSERT_EVENT
    for account_id in account_ids:
        statement.queue(
            session,
            id=f"msg_{uuid.uuid4().hex}",
            account_id=account_id,
            subject=subject,
            type=event_type,
            payload=body,
            created_at=now,
            next_attempt_at=now,
        )


def thread_data(thread: Any) -> dict[str, Any]:
    """What a thread event tells: the thread's own fields, as either party may read them
    (the counterparty is not among them)."""
    return {
        "thread_id": thread.id,
        "listing_id": thread.listing_id,
        "status": thread.status,
        "turn": thread.turn,
        "diff": thread.diff,
        "expires_at": clock.rfc3339(thread.expires_at),
    }
