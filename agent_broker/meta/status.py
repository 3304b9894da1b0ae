"""/status.json: a Statuspage-shaped summary of the service's own health samples.

- One component, `api` (this service has no web console).
- `days`: the last 30 UTC days, oldest first, today last. A day's uptime is the share of
  its samples that passed, as a percentage rounded down to two decimals (so a day with
  any failure never shows 100). A day without samples says so: state `no_data`, uptime
  null; nothing is assumed about it.
- `uptime_30d`: the same ratio over every sample of those 30 days (null when none).
- The component's state comes from the newest samples: `operational` when it passed,
  `partial_outage` after one failure, `major_outage` after two or more in a row, and
  `no_data` when there is no sample newer than STALE_AFTER.
- Incidents are the runs of consecutive failed samples within the 30 days, newest first;
  `resolved` once a passing sample follows, `investigating` while none has.

Samples are read with plain read-only queries (the table is this feature's own)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.clock import rfc3339
from agent_broker.meta.health import PERIOD
from agent_broker.meta.models import HealthSample

PAGE_NAME = "agent-broker"
WINDOW_DAYS = 30
STALE_AFTER = 3 * PERIOD
COMPONENT_ID = "api"
COMPONENT_NAME = "API"
INCIDENT_NAME = "API health check failing"

OPERATIONAL = "operational"
DEGRADED = "degraded_performance"
PARTIAL = "partial_outage"
MAJOR = "major_outage"
NO_DATA = "no_data"

# Page status (Statuspage vocabulary) for the one component's state.
INDICATORS = {
    OPERATIONAL: ("none", "All Systems Operational"),
    PARTIAL: ("major", "Partial System Outage"),
    MAJOR: ("critical", "Major System Outage"),
    NO_DATA: ("minor", "Status Unknown: No Recent Health Samples"),
}


@dataclass(frozen=True)
class _Sample:
    id: int
    taken_at: datetime
    ok: bool
    detail: str


def uptime_percent(ok: int, total: int) -> float | None:
    """Percentage of passing samples, rounded down to two decimals; None without samples."""
    if total == 0:
        return None
    return math.floor(ok * 10000 / total) / 100


def day_state(uptime: float | None) -> str:
    if uptime is None:
        return NO_DATA
    if uptime >= 100:
        return OPERATIONAL
    if uptime >= 99:
        return DEGRADED
    if uptime >= 90:
        return PARTIAL
    return MAJOR


def _samples(session: Session, since: datetime, now: datetime) -> list[_Sample]:
    rows = session.execute(
        select(HealthSample.id, HealthSample.taken_at, HealthSample.ok, HealthSample.detail)
        .where(HealthSample.taken_at >= since, HealthSample.taken_at <= now)
        .order_by(HealthSample.taken_at, HealthSample.id)
    )
    return [_Sample(*row) for row in rows]


def _current_state(samples: list[_Sample], now: datetime) -> str:
    if not samples or samples[-1].taken_at < now - STALE_AFTER:
        return NO_DATA
    if samples[-1].ok:
        return OPERATIONAL
    if len(samples) >= 2 and not samples[-2].ok:
        return MAJOR
    return PARTIAL


def _days(samples: list[_Sample], today: date) -> list[dict]:
    counts: dict[date, list[int]] = {}
    for sample in samples:
        tally = counts.setdefault(sample.taken_at.astimezone(UTC).date(), [0, 0])
        tally[0] += sample.ok
        tally[1] += 1
    days = []
    for back in range(WINDOW_DAYS - 1, -1, -1):
        day = today - timedelta(days=back)
        ok, total = counts.get(day, (0, 0))
        uptime = uptime_percent(ok, total)
        days.append({"date": day.isoformat(), "state": day_state(uptime), "uptime": uptime})
    return days


def _incidents(samples: list[_Sample]) -> list[dict]:
    incidents: list[dict] = []
    run: list[_Sample] = []

    def close(resolved_by: _Sample | None) -> None:
        first, last = run[0], run[-1]
        resolved_at = rfc3339(resolved_by.taken_at) if resolved_by else None
        incidents.append(
            {
                "id": f"hs-{first.id}",
                "name": INCIDENT_NAME,
                "status": "resolved" if resolved_by else "investigating",
                "impact": "major" if len(run) >= 2 else "minor",
                "components": [COMPONENT_ID],
                "started_at": rfc3339(first.taken_at),
                "updated_at": resolved_at or rfc3339(last.taken_at),
                "resolved_at": resolved_at,
                "failed_samples": len(run),
                "detail": first.detail,
            }
        )

    for sample in samples:
        if not sample.ok:
            run.append(sample)
        elif run:
            close(sample)
            run = []
    if run:
        close(None)
    incidents.reverse()
    return incidents


def status_document(session: Session | None, *, public_base_url: str, now: datetime) -> dict:
    """The document from the samples `session` reads; None: no samples to read."""
    today = now.astimezone(UTC).date()
    since = datetime.combine(today - timedelta(days=WINDOW_DAYS - 1), time(), tzinfo=UTC)
    samples = _samples(session, since, now) if session is not None else []
    state = _current_state(samples, now)
    indicator, description = INDICATORS[state]
    updated = samples[-1].taken_at if samples else now
    ok = sum(1 for s in samples if s.ok)
    return {
        "page": {
            "name": PAGE_NAME,
            "url": public_base_url,
            "updated_at": int(updated.timestamp()),
        },
        "status": {"indicator": indicator, "description": description},
        "components": [
            {
                "id": COMPONENT_ID,
                "name": COMPONENT_NAME,
                "state": state,
                "uptime_30d": uptime_percent(ok, len(samples)),
                "days": _days(samples, today),
            }
        ],
        "incidents": _incidents(samples),
    }
