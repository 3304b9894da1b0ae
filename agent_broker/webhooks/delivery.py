"""The `deliver-webhooks` job: send due events to their endpoints, signed per Standard
Webhooks (webhook-id, webhook-timestamp, webhook-signature over the exact body), through
the guarded outbound client, a bounded number at a time and with no transaction open.

Events of one thread or deal go one at a time, oldest first: an event waits while an
earlier one of the same subject is undelivered. A 2xx answer delivers it; anything else
retries with exponential backoff (10 s doubling to 1 h) until MAX_ATTEMPTS, then the event
is given up and the next of its subject goes.

One account cannot take the job from the others: a round takes at most PER_ACCOUNT of an
account's due events, every account's oldest before any account's second, and a run
starts no delivery once RUN_BUDGET (half the job's lease) is spent; what is left waits
for the next run, with no attempt counted."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.orm import Session
from standardwebhooks import Webhook

from agent_broker import clock
from agent_broker.config import Settings
from agent_broker.http.outbound import OutboundClient, OutboundPolicy, OutboundRefused
from agent_broker.webhooks import repository

log = structlog.get_logger("agent_broker.webhooks")

MAX_ATTEMPTS = 20
FIRST_RETRY = timedelta(seconds=10)
LONGEST_RETRY = timedelta(hours=1)
CONCURRENCY = 8
# An account's share of a round: no more than go out at once, so one account whose
# endpoint stalls holds a round for about one deadline, not the round's whole length.
PER_ACCOUNT = CONCURRENCY
ROUNDS = 20  # a run keeps going while it delivers, so a backlog drains in one run
DEADLINE_SECONDS = 10.0
MAX_ANSWER_BYTES = 4096
# No delivery starts once this much of the run is spent: half the jobs' lease (10 minutes,
# agent_broker.jobs.models.LEASE_TTL; a test holds the two together, since jobs sit above
# the features they run). What is in flight then ends within DEADLINE_SECONDS, and the
# other half of the lease is left for that, recording the results and a slow database,
# so no second replica can start the job meanwhile.
RUN_BUDGET = timedelta(minutes=5)


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    error: str | None = None


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: 10 s, 20 s, 40 s ... at most 1 h."""
    return min(FIRST_RETRY * 2 ** max(attempts - 1, 0), LONGEST_RETRY)


async def _send(
    outbound: OutboundClient, row: Any, gate: asyncio.Semaphore, budget_ends: datetime
) -> Outcome | None:
    """The delivery's outcome, or None when the run's budget was spent before its turn
    came (not sent, no attempt counted)."""
    async with gate:
        if clock.now() >= budget_ends:
            return None
        # The wall clock, not the service's: the receiver checks the timestamp against its
        # own clock (a replay guard), and the service clock may be moved (tests, travel).
        # Signed once its turn has come, so a wait at the gate does not age it.
        sent_at = datetime.now(UTC)
        headers = {
            "content-type": "application/json",
            "webhook-id": row.id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(row.secret).sign(row.id, sent_at, row.payload),
        }
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
        except Exception as error:  # noqa: BLE001 - one endpoint's fault is its own attempt
            # Whatever one endpoint did, the round's other deliveries are still recorded.
            log.error("webhook_delivery_error", error_type=type(error).__name__)
            return Outcome(False, f"error: {type(error).__name__}")
    if 200 <= answer.status_code < 300:
        return Outcome(True)
    return Outcome(False, f"answered {answer.status_code}")


async def _send_all(
    outbound: OutboundClient, rows: list[Any], budget_ends: datetime
) -> list[Outcome | None]:
    # The gate lets the tasks through in the order given: the round's, round-robin.
    gate = asyncio.Semaphore(CONCURRENCY)
    sends = (_send(outbound, row, gate, budget_ends) for row in rows)
    return list(await asyncio.gather(*sends))


def _record(
    session: Session, rows: list[Any], outcomes: list[Outcome | None], now: datetime
) -> int:
    delivered = 0
    for row, outcome in zip(rows, outcomes, strict=True):
        if outcome is None:
            continue  # not sent: the run's budget was spent
        attempts = row.attempts + 1
        if outcome.delivered:
            repository.mark_delivered(session, row.sequence, now=now, attempts=attempts)
            delivered += 1
            continue
        gave_up = attempts >= MAX_ATTEMPTS
        repository.mark_failed_attempt(
            session,
            row.sequence,
            attempts=attempts,
            next_at=now + backoff(attempts),
            failed_at=now if gave_up else None,
            error=outcome.error,
        )
    return delivered


def deliver_due(session: Session, settings: Settings, now: datetime) -> str:
    """The job; `now` is when the run started (just after its lease was claimed)."""
    outbound = OutboundClient(OutboundPolicy.from_settings(settings))
    budget_ends = now + RUN_BUDGET
    delivered = failed = 0
    for _ in range(ROUNDS):
        if clock.now() >= budget_ends:
            break
        rows = repository.due_events(session, now=clock.now(), per_account=PER_ACCOUNT)
        session.commit()  # nothing is held while the endpoints answer
        if not rows:
            break
        outcomes = asyncio.run(_send_all(outbound, rows, budget_ends))
        sent = _record(session, rows, outcomes, clock.now())
        session.commit()
        left = sum(outcome is None for outcome in outcomes)
        delivered, failed = delivered + sent, failed + len(rows) - left - sent
        if sent == 0 or left:
            break
    outcome = f"delivered {delivered} webhook events, {failed} attempts failed"
    if clock.now() >= budget_ends:
        outcome += f"; stopped at its {RUN_BUDGET.total_seconds():g} s budget"
    return outcome
