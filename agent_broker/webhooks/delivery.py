"""The `deliver-webhooks` job: send due events to their endpoints, signed per Standard
Webhooks (webhook-id, webhook-timestamp, webhook-signature over the exact body), through
the guarded outbound client, a bounded number at a time and with no transaction open.

Events of one thread or deal go one at a time, oldest first: an event waits while an
earlier one of the same subject is undelivered. A 2xx answer delivers it; anything else
retries with exponential backoff (10 s doubling to 1 h) until MAX_ATTEMPTS, then the event
is given up and the next of its subject goes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import and_, bindparam, exists, select, update
from sqlalchemy.orm import Session, aliased
from standardwebhooks import Webhook

from agent_broker import clock
from agent_broker.config import Settings
from agent_broker.db.prepared import Prepared
from agent_broker.http.outbound import OutboundClient, OutboundPolicy, OutboundRefused
from agent_broker.webhooks.models import WebhookEndpoint, WebhookEvent

MAX_ATTEMPTS = 20
FIRST_RETRY = timedelta(seconds=10)
LONGEST_RETRY = timedelta(hours=1)
BATCH = 200
CONCURRENCY = 8
ROUNDS = 20  # a run keeps going while it delivers, so a backlog drains in one run
DEADLINE_SECONDS = 10.0
MAX_ANSWER_BYTES = 4096

_events = WebhookEvent.__table__
_endpoints = WebhookEndpoint.__table__
_earlier = aliased(_events)
_DUE = Prepared(
    select(
        _events.c.sequence,
        _events.c.id,
        _events.c.payload,
        _events.c.attempts,
        _endpoints.c.url,
        _endpoints.c.secret,
    )
    .join(_endpoints, _endpoints.c.account_id == _events.c.account_id)
    .where(
        _events.c.delivered_at.is_(None),
        _events.c.failed_at.is_(None),
        _events.c.next_attempt_at <= bindparam("now"),
        ~exists().where(
            and_(
                _earlier.c.account_id == _events.c.account_id,
                _earlier.c.subject == _events.c.subject,
                _earlier.c.sequence < _events.c.sequence,
                _earlier.c.delivered_at.is_(None),
                _earlier.c.failed_at.is_(None),
            )
        ),
    )
    .order_by(_events.c.sequence)
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


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    error: str | None = None


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: 10 s, 20 s, 40 s ... at most 1 h."""
    return min(FIRST_RETRY * 2 ** max(attempts - 1, 0), LONGEST_RETRY)


async def _send(outbound: OutboundClient, row, gate: asyncio.Semaphore) -> Outcome:  # type: ignore[no-untyped-def]
    # The wall clock, not the service's: the receiver checks the timestamp against its own
    # clock (a replay guard), and the service clock may be moved (tests, travel).
    sent_at = datetime.now(UTC)
    headers = {
        "content-type": "application/json",
        "webhook-id": row.id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": Webhook(row.secret).sign(row.id, sent_at, row.payload),
    }
    async with gate:
        try:
            answer = await outbound.request(
                "POST",
                row.url,
                content=row.payload.encode(),
                headers=headers,
                max_bytes=MAX_ANSWER_BYTES,
                deadline_seconds=DEADLINE_SECONDS,
            )
        except OutboundRefused as refused:
            return Outcome(False, f"{refused.kind}: {refused}"[:300])
    if 200 <= answer.status_code < 300:
        return Outcome(True)
    return Outcome(False, f"answered {answer.status_code}")


async def _send_all(outbound: OutboundClient, rows: list) -> list[Outcome]:  # type: ignore[type-arg]
    gate = asyncio.Semaphore(CONCURRENCY)
    return list(await asyncio.gather(*(_send(outbound, row, gate) for row in rows)))


def _record(session: Session, rows: list, outcomes: list[Outcome], now: datetime) -> int:  # type: ignore[type-arg]
    delivered = 0
    for row, outcome in zip(rows, outcomes, strict=True):
        attempts = row.attempts + 1
        if outcome.delivered:
            _DELIVERED.execute(session, sequence=row.sequence, now=now, attempts=attempts)
            delivered += 1
            continue
        gave_up = attempts >= MAX_ATTEMPTS
        _RETRY.execute(
            session,
            sequence=row.sequence,
            attempts=attempts,
            next_at=now + backoff(attempts),
            failed_at=now if gave_up else None,
            error=outcome.error,
        )
    return delivered


def deliver_due(session: Session, settings: Settings, now: datetime) -> str:
    outbound = OutboundClient(OutboundPolicy.from_settings(settings))
    delivered = failed = 0
    for _ in range(ROUNDS):
        rows = _DUE.all(session, now=clock.now())
        session.commit()  # nothing is held while the endpoints answer
        if not rows:
            break
        outcomes = asyncio.run(_send_all(outbound, rows))
        sent = _record(session, rows, outcomes, clock.now())
        session.commit()
        delivered, failed = delivered + sent, failed + len(rows) - sent
        if sent == 0:
            break
    return f"delivered {delivered} webhook events, {failed} attempts failed"
