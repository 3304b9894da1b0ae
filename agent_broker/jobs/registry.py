"""The scheduled jobs. Each is a plain function of (session, settings, now) returning a
one-line outcome; later features add theirs here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from agent_broker.accounts.identities import forget_expired_tokens
from agent_broker.certification.badge import badges_job
from agent_broker.certification.checks import run_checks as certification_checks
from agent_broker.config import Settings
from agent_broker.deals import settlement
from agent_broker.deals.service import purge_due
from agent_broker.events.service import forget_expired as forget_expired_events
from agent_broker.idempotency.service import purge_expired
from agent_broker.ledger import sealer
from agent_broker.ledger.reconciliation import ESCROW_JOB_PERIOD
from agent_broker.ledger.service import settle_lapsed_holds
from agent_broker.listings.service import expire_due
from agent_broker.meta import health
from agent_broker.threads.service import expire_due as expire_threads_due
from agent_broker.webhooks.delivery import deliver_due as deliver_webhooks


@dataclass(frozen=True)
class Job:
    name: str
    period: timedelta
    run: Callable[[Session, Settings, datetime], str]
    description: str


def _expire_holds(session: Session, settings: Settings, now: datetime) -> str:
    return f"settled {settle_lapsed_holds(session, now=now)} lapsed holds"


def _expire_listings(session: Session, settings: Settings, now: datetime) -> str:
    return f"expired {expire_due(session, now=now)} listings"


def _expire_threads(session: Session, settings: Settings, now: datetime) -> str:
    return f"closed {expire_threads_due(session, now=now)} threads past their life"


def _purge_deals(session: Session, settings: Settings, now: datetime) -> str:
    return f"purged {purge_due(session, now=now)} deals"


def _escrow_deadlines(session: Session, settings: Settings, now: datetime) -> str:
    return f"settled {settlement.settle_due(session, now=now)} escrows past their deadline"


def _expire_idempotency_keys(session: Session, settings: Settings, now: datetime) -> str:
    forgotten = purge_expired(session, settings.idempotency_retention_hours, now=now)
    return f"forgot {forgotten} idempotency keys"


def _forget_spent_tokens(session: Session, settings: Settings, now: datetime) -> str:
    return f"forgot {forget_expired_tokens(session, now=now)} spent OAuth tokens"


def _forget_old_events(session: Session, settings: Settings, now: datetime) -> str:
    forgotten = forget_expired_events(session, settings.event_retention_hours, now=now)
    return f"forgot {forgotten} events past their retention"


def _ledger_seal(session: Session, settings: Settings, now: datetime) -> str:
    # The sealer keeps its own short transactions (agent_broker.ledger.sealer), so it
    # never holds the write lock while it re-verifies the journal.
    return sealer.run(session.bind, now=now).outcome


JOBS: dict[str, Job] = {
    job.name: job
    for job in (
        Job(
            "expire-listings",
            timedelta(minutes=5),
            _expire_listings,
            "mark listings past their life as expired",
        ),
        Job(
            "expire-threads",
            timedelta(minutes=5),
            _expire_threads,
            "close negotiation threads past their life (their holds lapse)",
        ),
        Job(
            "expire-holds",
            timedelta(minutes=5),
            _expire_holds,
            "give lapsed escrow holds back to spendable balances",
        ),
        Job(
            "purge-deals",
            timedelta(minutes=15),
            _purge_deals,
            "erase revealed contacts and routes of deals past purge_at",
        ),
        Job(
            "escrow-deadlines",
            # The ledger's check calls an escrow overdue one period past its deadline.
            ESCROW_JOB_PERIOD,
            _escrow_deadlines,
            "refund escrows not delivered in time; release those delivered and not"
            " accepted or rejected in time",
        ),
        Job(
            "expire-idempotency-keys",
            timedelta(hours=1),
            _expire_idempotency_keys,
            "forget Idempotency-Key records past their retention",
        ),
        Job(
            "forget-events",
            timedelta(hours=1),
            _forget_old_events,
            "forget account events past BROKER_EVENT_RETENTION_HOURS",
        ),
        Job(
            "forget-spent-tokens",
            timedelta(hours=1),
            _forget_spent_tokens,
            "forget spent OAuth tokens once they have expired",
        ),
        Job(
            "ledger-seal",
            timedelta(hours=1),
            _ledger_seal,
            "extend the journal's hash chain, re-verify it and store the ledger verdict",
        ),
        Job(
            "deliver-webhooks",
            timedelta(seconds=15),
            deliver_webhooks,
            "send due webhook events to agents' endpoints, in order per thread or deal",
        ),
        Job(
            "certification-checks",
            timedelta(hours=1),
            certification_checks,
            "renew certification periods that ended; probe every subscribed deal route",
        ),
        Job(
            "certification-badges",
            timedelta(days=1),
            badges_job,
            "recompute the daily certification badge from the last 7 days of checks",
        ),
        Job(
            "health-sample",
            health.PERIOD,
            health.sample_job,
            "probe the service's own health for /status.json; drop samples past 31 days",
        ),
    )
}
