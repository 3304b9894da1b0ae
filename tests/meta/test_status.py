from __future__ import annotations

import socket
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from datetime import time as day_time

import psycopg
import pytest
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import run_job
from agent_broker.meta import health
from agent_broker.meta.models import HealthSample
from agent_broker.meta.status import day_state, uptime_percent


def noon_today() -> datetime:
    """Move the service clock to 12:00 UTC of the current day, so the day has room on
    both sides whatever the hour the suite runs at."""
    now = clock.now()
    target = datetime.combine(now.date(), day_time(12), tzinfo=UTC)
    clock.advance(target - now)
    return target


def add_samples(app, *samples: tuple[datetime, bool] | tuple[datetime, bool, str]) -> None:
    with app.state.context.db.writer() as session:
        for taken_at, ok, *detail in samples:
            detail_text = detail[0] if detail else ("ok" if ok else "database: OperationalError")
            session.add(HealthSample(taken_at=taken_at, ok=ok, detail=detail_text))
        session.commit()


def _status(client) -> dict:
    response = client.get("/status.json")
    assert response.status_code == 200, response.text
    return response.json()


def _samples(app) -> list[HealthSample]:
    with app.state.context.db.reader() as session:
        return list(session.scalars(select(HealthSample).order_by(HealthSample.taken_at)))


def test_without_samples_every_day_is_no_data_and_nothing_is_claimed(client):
    now = noon_today()
    body = _status(client)
    assert body["page"] == {
        "name": "agent-broker",
        "url": "https://broker.test",
        "updated_at": int(now.timestamp()),
    }
    assert body["status"]["indicator"] == "minor"
    [api] = body["components"]
    assert api["id"] == "api" and api["name"] == "API"
    assert api["state"] == "no_data"
    assert api["uptime_30d"] is None
    assert len(api["days"]) == 30
    assert all(day == {**day, "state": "no_data", "uptime": None} for day in api["days"])
    assert api["days"][-1]["date"] == now.date().isoformat()
    assert api["days"][0]["date"] == (now - timedelta(days=29)).date().isoformat()
    assert body["incidents"] == []


def test_days_report_the_share_of_passing_samples(app, client):
    now = noon_today()
    add_samples(
        app,
        # 3 days ago: 3 of 4 passed.
        (now - timedelta(days=3, hours=4), True),
        (now - timedelta(days=3, hours=3), True),
        (now - timedelta(days=3, hours=2), False),
        (now - timedelta(days=3, hours=1), True),
        # 30 days ago: outside the window, ignored.
        (now - timedelta(days=30), False),
        # Today: all passed.
        (now - timedelta(hours=2), True),
        (now - timedelta(minutes=5), True),
    )
    body = _status(client)
    [api] = body["components"]
    days = {day["date"]: day for day in api["days"]}
    three_ago = days[(now - timedelta(days=3)).date().isoformat()]
    assert three_ago == {**three_ago, "state": "major_outage", "uptime": 75.0}
    today = days[now.date().isoformat()]
    assert today == {**today, "state": "operational", "uptime": 100.0}
    yesterday = days[(now - timedelta(days=1)).date().isoformat()]
    assert yesterday["state"] == "no_data" and yesterday["uptime"] is None
    assert api["uptime_30d"] == pytest.approx(83.33)
    assert api["state"] == "operational"
    assert body["status"] == {"indicator": "none", "description": "All Systems Operational"}
    assert body["page"]["updated_at"] == int((now - timedelta(minutes=5)).timestamp())


def test_uptime_is_rounded_down_so_a_failure_never_shows_as_100():
    assert uptime_percent(8639, 8640) == 99.98
    assert uptime_percent(2, 3) == 66.66
    assert uptime_percent(0, 5) == 0.0
    assert uptime_percent(0, 0) is None


def test_a_day_state_follows_its_uptime():
    assert day_state(None) == "no_data"
    assert day_state(100.0) == "operational"
    assert day_state(99.65) == "degraded_performance"
    assert day_state(99.0) == "degraded_performance"
    assert day_state(95.0) == "partial_outage"
    assert day_state(90.0) == "partial_outage"
    assert day_state(89.99) == "major_outage"


def test_one_failure_is_a_partial_outage_two_in_a_row_a_major_one(app, client):
    now = noon_today()
    add_samples(app, (now - timedelta(minutes=10), True), (now - timedelta(minutes=5), False))
    body = _status(client)
    assert body["components"][0]["state"] == "partial_outage"
    assert body["status"]["indicator"] == "major"
    add_samples(app, (now - timedelta(minutes=1), False))
    clock.advance(timedelta(minutes=1))  # past the cache
    body = _status(client)
    assert body["components"][0]["state"] == "major_outage"
    assert body["status"] == {"indicator": "critical", "description": "Major System Outage"}


def test_the_state_is_no_data_once_samples_stop(app, client):
    now = noon_today()
    add_samples(app, (now - timedelta(minutes=16), True))
    body = _status(client)
    assert body["components"][0]["state"] == "no_data"
    assert body["status"]["indicator"] == "minor"
    # Today still counts its one sample.
    assert body["components"][0]["days"][-1]["uptime"] == 100.0


def test_incidents_are_runs_of_failed_samples_newest_first(app, client):
    now = noon_today()
    start = now - timedelta(days=2)
    add_samples(
        app,
        (start, True),
        (start + timedelta(minutes=5), False, "redis: ConnectionError"),
        (start + timedelta(minutes=10), False),
        (start + timedelta(minutes=15), True),
        (now - timedelta(minutes=6), True),
        (now - timedelta(minutes=1), False, "database: slow (1500 ms)"),
    )
    incidents = _status(client)["incidents"]
    assert len(incidents) == 2
    ongoing, resolved = incidents
    assert ongoing["status"] == "investigating"
    assert ongoing["impact"] == "minor"
    assert ongoing["resolved_at"] is None
    assert ongoing["failed_samples"] == 1
    assert ongoing["detail"] == "database: slow (1500 ms)"
    assert ongoing["started_at"] == clock.rfc3339(now - timedelta(minutes=1))
    assert ongoing["components"] == ["api"]
    assert resolved["status"] == "resolved"
    assert resolved["impact"] == "major"
    assert resolved["failed_samples"] == 2
    assert resolved["detail"] == "redis: ConnectionError"
    assert resolved["started_at"] == clock.rfc3339(start + timedelta(minutes=5))
    assert resolved["resolved_at"] == clock.rfc3339(start + timedelta(minutes=15))
    assert resolved["updated_at"] == resolved["resolved_at"]
    assert resolved["id"] != ongoing["id"]
    assert resolved["name"] == ongoing["name"] == "API health check failing"


def test_the_document_is_recomputed_after_its_short_cache(app, client):
    now = noon_today()
    assert _status(client)["components"][0]["state"] == "no_data"
    add_samples(app, (now, True))
    assert _status(client)["components"][0]["state"] == "no_data"  # cached
    clock.advance(timedelta(seconds=31))
    assert _status(client)["components"][0]["state"] == "operational"


def test_the_health_sample_job_records_a_passing_sample(app, client):
    noon_today()
    outcome = run_job(app.state.context, "health-sample")
    assert outcome == "health ok; purged 0 old samples"
    [sample] = _samples(app)
    assert sample.ok and sample.detail == "ok"
    body = _status(client)
    assert body["components"][0]["state"] == "operational"
    assert body["components"][0]["days"][-1]["uptime"] == 100.0


def test_a_failing_check_records_a_failed_sample_naming_it(make_app):
    # Nothing listens on port 1: the configured Redis is unreachable.
    app = make_app(redis_url="redis://127.0.0.1:1/0")
    outcome = run_job(app.state.context, "health-sample")
    assert outcome == "health failed (redis: ConnectionError); purged 0 old samples"
    [sample] = _samples(app)
    assert not sample.ok
    assert sample.detail == "redis: ConnectionError"


def test_a_slow_database_fails_the_sample(app, monkeypatch):
    monkeypatch.setattr(health, "SLOW_DATABASE_MS", -1.0)
    run_job(app.state.context, "health-sample")
    [sample] = _samples(app)
    assert not sample.ok
    assert sample.detail.startswith("database: slow (")


def test_the_job_purges_samples_past_31_days(app):
    now = noon_today()
    add_samples(
        app,
        (now - timedelta(days=31, minutes=1), True),
        (now - timedelta(days=40), False),
        (now - timedelta(days=30, hours=23), True),
    )
    outcome = run_job(app.state.context, "health-sample")
    assert outcome.endswith("purged 2 old samples")
    with app.state.context.db.reader() as session:
        assert session.scalar(select(func.count()).select_from(HealthSample)) == 2


def test_the_job_runs_every_five_minutes():
    assert JOBS["health-sample"].period == timedelta(minutes=5)


def test_status_and_stats_are_modelled_in_openapi_and_need_no_key(client):
    spec = client.get("/openapi.json").json()
    for path, model in (("/status.json", "Status"), ("/stats.json", "Stats")):
        operation = spec["paths"][path]["get"]
        schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith("/" + model)
        assert "security" not in operation
    component = spec["components"]["schemas"]["StatusComponent"]
    assert set(component["properties"]) == {"id", "name", "state", "uptime_30d", "days"}
    stats = spec["components"]["schemas"]["Stats"]["properties"]
    assert {
        "generated_at",
        "registered_agents",
        "sealed_deals",
        "sealed_deals_window_days",
        "median_seal_seconds",
        "median_seal_min_deals",
        "live_listings",
    } <= set(stats)


def _idle_in_transaction(app) -> bool:  # noqa: ANN001
    """Whether a session of the app's database holds a transaction open: SQLite's write
    lock taken, or a PostgreSQL session idle in a transaction."""
    url = app.state.context.settings.database_url
    if url.startswith("sqlite"):
        probe = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            return False
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
    dsn = url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(dsn, autocommit=True) as admin:
        return bool(
            admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state LIKE 'idle in transaction%'"
            ).fetchone()[0]
        )


def test_no_transaction_is_open_while_the_sample_waits_for_redis(make_app):
    # A Redis that accepts connections and never answers: the ping waits its whole timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        app = make_app(redis_url=f"redis://127.0.0.1:{silent.getsockname()[1]}/0")
        outcome: list[str | None] = []
        job = threading.Thread(
            target=lambda: outcome.append(run_job(app.state.context, "health-sample"))
        )
        job.start()
        time.sleep(health.REDIS_TIMEOUT_S / 2)
        assert job.is_alive()  # still waiting for Redis
        assert not _idle_in_transaction(app)
        job.join(timeout=30)
    assert outcome == ["health failed (redis: TimeoutError); purged 0 old samples"]
