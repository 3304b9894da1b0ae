"""Prometheus metrics at /metrics, served only when BROKER_METRICS_ENABLED is true.

Each app owns a CollectorRegistry (never the process-wide default), so several apps in one
process (tests) never share or collide on series. With several uvicorn workers each worker
has its own registry: a scrape sees the worker that answered it, so scrape replicas that
run one worker each (docs/operators/deploy.md, "Logs and metrics").

Series:
- broker_http_requests_total{method,route,status} and
  broker_http_request_duration_seconds{method,route}: route is the path template
  (`/v1/listings/{listing_id}`), or `unmatched` for paths no route serves.
- broker_job_runs_total{job,outcome} and broker_job_duration_seconds{job}: runs of
  scheduled jobs inside `serve` (outcome ok or failed); runs skipped because another
  replica holds the lease or the job is not due are not runs.
- broker_ledger_verdict{status}: 1 for the status GET /v1/ledger/verify would serve (ok,
  broken or unavailable, which includes "no verdict yet"), 0 for the others; read from
  the database when scraped, through the verdict source the app passes in.
- broker_fees_captured_micro_usd_total{kind}: micro-USD paid into the fee book, by journal
  entry kind (listing_fee, deal_fee, certification_period, escrow_release, escrow_split).
  Counted when the transaction that journalled the fee commits: the ledger publishes fees
  then (agent_broker.ledger.events).
- broker_http_unavailable_total{cause}: requests answered 503 because the database was
  out of reach (database_unreachable: a connection refused or lost) or did not answer in
  time (database_timeout); agent_broker.db.outages."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fastapi import Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session, sessionmaker

from agent_broker.db.engine import Database
from agent_broker.db.outages import CAUSES
from agent_broker.http.context import context_of
from agent_broker.http.routing import broker_router
from agent_broker.ledger.events import on_fees_committed

VERDICT_STATES = ("ok", "broken", "unavailable")
# Reads the status of the stored ledger verdict in the given session ("ok", "broken",
# "unavailable"), or None when no verdict exists yet.
VerdictSource = Callable[[Session], str | None]


def _verdict_status(result: str | None) -> str:
    return result if result in VERDICT_STATES else "unavailable"


class _VerdictCollector(Collector):
    def __init__(self, db: Database, source: VerdictSource) -> None:
        self._db, self._source = db, source

    def describe(self) -> Iterator[Metric]:
        return iter(())

    def collect(self) -> Iterator[Metric]:
        try:
            with self._db.reader() as session:
                status = _verdict_status(self._source(session))
        except Exception:  # noqa: BLE001 - an unreadable verdict is what 503 reports too
            status = "unavailable"
        family = GaugeMetricFamily(
            "broker_ledger_verdict",
            "The stored ledger verdict: 1 for its status, 0 for the others.",
            labels=["status"],
        )
        for state in VERDICT_STATES:
            family.add_metric([state], 1.0 if state == status else 0.0)
        yield family


class Metrics:
    def __init__(self, db: Database, *, verdict_source: VerdictSource | None = None) -> None:
        self.registry = CollectorRegistry()
        self.http_requests = Counter(
            "broker_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_latency = Histogram(
            "broker_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            registry=self.registry,
        )
        self.job_runs = Counter(
            "broker_job_runs",
            "Scheduled job runs in this process, by job and outcome (ok, failed).",
            ["job", "outcome"],
            registry=self.registry,
        )
        self.job_duration = Histogram(
            "broker_job_duration_seconds",
            "Duration of scheduled job runs in this process.",
            ["job"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300),
            registry=self.registry,
        )
        self.fees_captured = Counter(
            "broker_fees_captured_micro_usd",
            "Micro-USD captured into the fee book by committed transactions, by entry kind.",
            ["kind"],
            registry=self.registry,
        )
        self.unavailable = Counter(
            "broker_http_unavailable",
            "Requests answered 503 for a database outage or timeout, by cause.",
            ["cause"],
            registry=self.registry,
        )
        for cause in CAUSES:  # each cause's series exists from the start, at zero
            self.unavailable.labels(cause)
        if verdict_source is not None:
            self.registry.register(_VerdictCollector(db, verdict_source))

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http_requests.labels(method, route, str(status)).inc()
        self.http_latency.labels(method, route).observe(seconds)

    def count_unavailable(self, cause: str) -> None:
        self.unavailable.labels(cause).inc()

    def job_finished(self, job: str, outcome: str, seconds: float) -> None:
        self.job_runs.labels(job, outcome).inc()
        self.job_duration.labels(job).observe(seconds)

    def count_fees_on_commit(self, factory: sessionmaker[Session]) -> None:
        """Count the fees journalled by sessions of `factory` when they commit."""

        def _count(kind: str, amount_micro: int) -> None:
            self.fees_captured.labels(kind).inc(amount_micro)

        on_fees_committed(factory, _count)

    def render(self) -> bytes:
        return generate_latest(self.registry)


router = broker_router(include_in_schema=False)


@router.get("/metrics")
def metrics(request: Request) -> Response:
    return Response(context_of(request).part(Metrics).render(), media_type=CONTENT_TYPE_LATEST)
