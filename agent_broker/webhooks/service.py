"""Webhook endpoints and the event outbox.

`PUT /v1/account/webhook {url}` sets the endpoint and answers a new signing secret, once;
`DELETE` removes it (events still waiting are dropped with it). Every event goes to the
account's log (read through GET /v1/events and its stream), and to the outbox too when
the account has an endpoint, in the same transaction as what it reports, so an event
exists exactly when its cause was committed. Thread events name the thread, the
listing, the terms and whose turn it is, never the counterparty: who it is stays hidden
until a deal seals, as everywhere else."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.http.urls import public_https_url
from agent_broker.webhooks import repository

EVENT_TYPES = (
    "thread.opened",
    "thread.offer",
    "thread.closed",
    "thread.auto_closed",
    "deal.sealed",
    "deal.rated",
    "deal.disputed",
    "deal.delivered",
    "deal.rejected",
    "deal.released",
    "deal.refunded",
    "deal.ruled",
    "account.identity_linked",
)


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def set_endpoint(session: Session, account_id: str, url: str, *, now: datetime) -> dict:
    # The rules of a deal route, and a host that is a domain name other than localhost
    # (agent_broker.accounts.validation): refused here, once, rather than retried at every
    # delivery. Where the name resolves is checked at each delivery.
    checked = public_https_url(url, "url")
    secret = new_secret()
    repository.set_endpoint(session, account_id, url=checked, secret=secret, now=now)
    return {"url": checked, "secret": secret}


def delete_endpoint(session: Session, account_id: str) -> None:
    repository.delete_undelivered_events(session, account_id)
    repository.delete_endpoint(session, account_id)


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
    """The event in each account's log, and in the outbox for each with an endpoint (one
    id for both copies), the payload written out once for all of them."""
    assert event_type in EVENT_TYPES, event_type
    payload = {"type": event_type, "timestamp": clock.rfc3339(now), "data": data}
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    event_ids = {account_id: f"msg_{uuid.uuid4().hex}" for account_id in account_ids}
    repository.log_event(session, event_ids=event_ids, event_type=event_type, payload=body, now=now)
    for account_id in repository.event_candidates(session, account_ids):
        repository.insert_event(
            session,
            event_id=event_ids[account_id],
            account_id=account_id,
            subject=subject,
            event_type=event_type,
            payload=body,
            now=now,
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
        "price_micro": thread.price_micro,
        "expires_at": clock.rfc3339(thread.expires_at),
    }
