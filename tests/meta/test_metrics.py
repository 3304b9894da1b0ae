from __future__ import annotations

import time
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from agent_broker import clock
from agent_broker.app import create_app
from agent_broker.config import Settings
from agent_broker.jobs.registry import JOBS, Job
from agent_broker.jobs.runner import run_job
from agent_broker.ledger import books
from agent_broker.ledger.service import charge
from agent_broker.meta.metrics import Metrics
from tests.support.accounts import complete_profile, fund, register
from tests.support.http import assert_problem, new_key
from tests.support.market import DEAL_FEE, FEE, post


def _samples(text: str) -> dict[tuple[str, frozenset], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def _value(client, name: str, **labels: str) -> float | None:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    return _samples(response.text).get((name, frozenset(labels.items())))


@pytest.fixture
def metered(make_app):
    app = make_app(metrics_enabled=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield app, client


def test_metrics_are_off_by_default_and_then_404(client):
    assert_problem(client.get("/metrics"), 404, "not_found")
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]


def test_requests_are_counted_by_route_template_and_status(metered):
    app, client = metered
    agent = register(client)
    for _ in range(2):
        client.get("/v1/account", headers=agent.headers)
    client.get("/v1/account", headers={"x-api-key": "ab_live_" + "0" * 32})
    client.get("/v1/listings/abc-123", headers=agent.headers)
    client.get("/no/such/path")
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    found = _samples(response.text)

    def count(method: str, route: str, status: str) -> float | None:
        key = {"method": method, "route": route, "status": status}
        return found.get(("broker_http_requests_total", frozenset(key.items())))

    assert count("GET", "/v1/account", "200") == 2
    assert count("GET", "/v1/account", "401") == 1
    assert count("POST", "/v1/account/register", "201") == 1
    assert count("GET", "/v1/listings/{listing_id}", "404") == 1
    assert count("GET", "unmatched", "404") == 1
    latency = ("broker_http_request_duration_seconds_count", "GET", "/v1/account")
    assert found[(latency[0], frozenset({"method": "GET", "route": "/v1/account"}.items()))] == 3
    assert not any("abc-123" in str(key) for key in found)


def test_each_app_has_its_own_registry(make_app):
    one, two = make_app(metrics_enabled=True), make_app(metrics_enabled=True)
    with TestClient(one) as first, TestClient(two) as second:
        first.get("/health")
        assert (
            _value(first, "broker_http_requests_total", method="GET", route="/health", status="200")
            == 1
        )
        assert (
            _value(
                second, "broker_http_requests_total", method="GET", route="/health", status="200"
            )
            is None
        )


def test_fees_are_counted_once_their_transaction_commits(metered):
    app, client = metered
    seller = register(client)
    complete_profile(client, seller)
    fund(app, seller.account_id, 10 * FEE + 2 * DEAL_FEE, real_money=True)
    assert post(client, seller).status_code == 201
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="listing_fee") == FEE
    # A refused post charges nothing and counts nothing.
    assert post(client, seller, title="").status_code == 400
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="listing_fee") == FEE

    # A seal captures the opener's hold and charges the poster: both are deal fees.
    opener = register(client)
    complete_profile(client, opener)
    fund(app, opener.account_id, 2 * DEAL_FEE, real_money=True)
    listing = post(client, seller).json()["id"]
    thread = client.post(
        f"/v1/listings/{listing}/threads",
        json={"diff": "I can do it in 2 days for $2.50"},
        headers={**opener.headers, "Idempotency-Key": new_key()},
    ).json()["id"]
    sealed = client.post(
        f"/v1/threads/{thread}/finalize",
        headers={**seller.headers, "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201, sealed.text
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="deal_fee") == 2 * DEAL_FEE
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="listing_fee") == 2 * FEE


def test_a_fee_in_a_rolled_back_transaction_or_savepoint_is_not_counted(metered):
    app, client = metered
    agent = register(client)
    fund(app, agent.account_id, 10 * FEE)

    def fee(session) -> None:
        charge(
            session,
            agent.account_id,
            FEE,
            sink=books.FEES,
            kind="listing_fee",
            memo="test",
            now=clock.now(),
        )

    with app.state.context.db.writer() as session:
        fee(session)
        with session.begin_nested():
            pass  # releasing a savepoint commits nothing yet
        session.rollback()
        with session.begin_nested():
            fee(session)
        savepoint = session.begin_nested()
        fee(session)
        savepoint.rollback()
        session.commit()
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="listing_fee") == FEE
    with app.state.context.db.writer() as session:
        fee(session)  # closed without a commit
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="listing_fee") == FEE
    # Payments into other books are not fees.
    with app.state.context.db.writer() as session:
        charge(
            session,
            agent.account_id,
            FEE,
            sink=books.OPERATOR,
            kind="adjustment",
            memo="test",
            now=clock.now(),
        )
        session.commit()
    assert _value(client, "broker_fees_captured_micro_usd_total", kind="adjustment") is None


def test_job_runs_are_counted_by_outcome(metered, monkeypatch):
    app, client = metered
    observer = app.state.context.part(Metrics).job_finished
    run_job(app.state.context, "health-sample", observer=observer)

    def _boom(session, settings, now):
        raise RuntimeError("boom")

    monkeypatch.setitem(JOBS, "test-boom", Job("test-boom", timedelta(hours=1), _boom, "fails"))
    with pytest.raises(RuntimeError):
        run_job(app.state.context, "test-boom", observer=observer)
    assert _value(client, "broker_job_runs_total", job="health-sample", outcome="ok") == 1
    assert _value(client, "broker_job_runs_total", job="test-boom", outcome="failed") == 1
    assert _value(client, "broker_job_duration_seconds_count", job="health-sample") == 1


def test_the_scheduler_inside_serve_reports_its_runs(make_settings):
    settings = make_settings(metrics_enabled=True, jobs_enabled=True, jobs_tick_seconds=0.05)
    app = create_app(settings)
    try:
        with TestClient(app) as client:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                ran = _value(client, "broker_job_runs_total", job="health-sample", outcome="ok")
                if ran:
                    break
                time.sleep(0.05)
            assert ran == 1
    finally:
        app.state.context.db.dispose()


def test_the_ledger_verdict_gauge_shows_the_served_status(metered):
    app, client = metered
    # No verdict has been computed: GET /v1/ledger/verify would answer `unavailable`.
    assert _value(client, "broker_ledger_verdict", status="unavailable") == 1
    assert _value(client, "broker_ledger_verdict", status="ok") == 0


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ("ok", "ok"),
        ("broken", "broken"),
        (None, "unavailable"),
        ("something-else", "unavailable"),
        (RuntimeError("unreadable"), "unavailable"),
    ],
)
def test_the_verdict_gauge_reads_its_source_when_scraped(app, result, expected):
    def source(session):
        if isinstance(result, Exception):
            raise result
        return result

    metrics = Metrics(app.state.context.db, verdict_source=source)
    found = _samples(metrics.render().decode())
    for state in ("ok", "broken", "unavailable"):
        key = ("broker_ledger_verdict", frozenset({"status": state}.items()))
        assert found[key] == (1 if state == expected else 0)


def test_fees_are_counted_by_the_app_whose_database_journalled_them(make_app):
    one, two = make_app(metrics_enabled=True), make_app(metrics_enabled=True)
    with TestClient(one) as first, TestClient(two) as second:
        seller = register(first)
        fund(one, seller.account_id, 10 * FEE, real_money=True)
        assert post(first, seller).status_code == 201
        fees = "broker_fees_captured_micro_usd_total"
        assert _value(first, fees, kind="listing_fee") == FEE
        assert _value(second, fees, kind="listing_fee") is None


def test_the_switches_come_from_the_environment(monkeypatch):
    assert Settings().metrics_enabled is False
    assert Settings().jobs_tick_seconds == 15
    monkeypatch.setenv("BROKER_METRICS_ENABLED", "true")
    monkeypatch.setenv("BROKER_JOBS_TICK_SECONDS", "0.5")
    settings = Settings()
    assert settings.metrics_enabled is True
    assert settings.jobs_tick_seconds == 0.5
    with pytest.raises(ValidationError):
        Settings(jobs_tick_seconds=0)
