"""Database outages (agent_broker.db.outages, docs/operators/outages.md): a request whose
connection is refused or lost answers 503 with a problem document and a Retry-After,
never 500; a read that lost its connection runs once more on a fresh one, a write never
does; the metrics count the 503s by cause; and a server that kills every connection of
the database under concurrent reads and writes costs no 500."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import errors
from sqlalchemy import exc as sa_exc
from sqlalchemy import text

from agent_broker import clock
from agent_broker.db import outages
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.ledger.audit import audit
from agent_broker.meta.reachability import Reachability
from tests.support.accounts import balance, fund, register
from tests.support.http import assert_problem, new_key, serving
from tests.support.market import FEE, listing_count, post


def _postgresql_only(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("connections a server closes: PostgreSQL's")


def _dsn(database_url: str) -> str:
    return database_url.replace("postgresql+psycopg://", "postgresql://", 1)


def _terminate_backends(database_url: str) -> int:
    """What a restart does to the database's sessions: every server process of this
    test's database (and of no other) is terminated."""
    dsn = _dsn(database_url)
    name = dsn.rsplit("/", 1)[1]
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


def _metric(client, cause: str) -> float:  # noqa: ANN001
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(f'broker_http_unavailable_total{{cause="{cause}"}}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no broker_http_unavailable_total series for {cause}")


# --- which errors are outages ------------------------------------------------------------


def _wrapped(orig: Exception, statement: str = "SELECT 1") -> sa_exc.DBAPIError:
    return sa_exc.OperationalError(statement, {}, orig)


@pytest.mark.parametrize(
    ("orig", "cause"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), "unreachable"),
        (
            errors.AdminShutdown("terminating connection due to administrator command"),
            "unreachable",
        ),
        (errors.CannotConnectNow("the database system is shutting down"), "unreachable"),
        (errors.TooManyConnections("too many clients"), "unreachable"),
        (errors.ConnectionFailure("connection failure"), "unreachable"),
        (errors.QueryCanceled("statement timeout"), "timeout"),
        (errors.LockNotAvailable("lock timeout"), "timeout"),
        (errors.DiskFull("disk full"), None),
        (errors.UniqueViolation("duplicate key"), None),
    ],
)
def test_the_causes(orig, cause):  # noqa: ANN001
    expected = {"unreachable": outages.DATABASE_UNREACHABLE, "timeout": outages.DATABASE_TIMEOUT}
    assert outages.cause(_wrapped(orig)) == expected.get(cause)
    assert outages.cause(orig) == expected.get(cause)  # the driver's own, unwrapped
    try:  # and wrapped again by whatever caught it
        raise RuntimeError("wrapped") from _wrapped(orig)
    except RuntimeError as chained:
        assert outages.cause(chained) == expected.get(cause)


def test_only_a_lost_connection_is_worth_another_try():
    closed = psycopg.OperationalError("server closed the connection unexpectedly")
    assert outages.lost(_wrapped(closed))
    assert outages.lost(_wrapped(errors.AdminShutdown("terminating connection")))
    # Refused: the connection never opened, or the server is going down.
    assert not outages.lost(_wrapped(psycopg.OperationalError("refused"), outages.CONNECT))
    assert not outages.lost(_wrapped(errors.CannotConnectNow("shutting down")))
    assert not outages.lost(_wrapped(errors.QueryCanceled("statement timeout")))


# --- what a request answers ----------------------------------------------------------------


def test_an_outage_answers_503_and_is_counted_by_cause(make_app):
    app = make_app(metrics_enabled=True)

    def raising(error: Exception):  # noqa: ANN202
        def route() -> None:
            raise error

        return route

    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    refused = psycopg.OperationalError("connection failed: Connection refused")
    app.post("/test/lost")(raising(_wrapped(lost)))
    app.get("/test/refused")(raising(_wrapped(refused, outages.CONNECT)))
    app.get("/test/raw")(raising(refused))  # the driver's own, as the pool raises it
    app.get("/test/timeout")(raising(_wrapped(errors.QueryCanceled("statement timeout"))))
    app.get("/test/other")(raising(_wrapped(errors.DiskFull("disk full"))))
    with TestClient(app, raise_server_exceptions=False) as client:
        for path in ("/test/refused", "/test/raw"):
            answer = client.get(path)
            body = assert_problem(answer, 503, "internal_error")
            assert answer.headers["Retry-After"] == "2"
            assert "unreachable" in body["detail"]
        assert_problem(client.post("/test/lost"), 503, "internal_error")
        answer = client.get("/test/timeout")
        assert_problem(answer, 503, "internal_error")
        assert answer.headers["Retry-After"] == "1"
        assert_problem(client.get("/test/other"), 500, "internal_error")
        assert _metric(client, outages.DATABASE_UNREACHABLE) == 3
        assert _metric(client, outages.DATABASE_TIMEOUT) == 1


def _kill_own_connection_once(database_url: str, session, calls: list[int]) -> None:  # noqa: ANN001
    """On the first call only, the server closes this session's connection under it."""
    calls.append(1)
    pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    if len(calls) == 1:
        with psycopg.connect(_dsn(database_url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    session.execute(text("SELECT 1")).scalar_one()


def test_a_read_that_lost_its_connection_runs_again_on_a_fresh_one(app, database_url):
    _postgresql_only(database_url)
    calls: list[int] = []

    @app.get("/test/read")
    def read(session: ReadSession) -> dict:
        _kill_own_connection_once(database_url, session, calls)
        return {"ok": True}

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/test/read")
        assert answer.status_code == 200, answer.text
        assert len(calls) == 2
        assert app.state.context.db.engine.pool.checkedout() == 0


def test_a_read_runs_again_once_only(app, database_url):
    _postgresql_only(database_url)
    calls: list[int] = []

    @app.get("/test/read-always-lost")
    def read(session: ReadSession) -> dict:
        calls.append(1)
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with psycopg.connect(_dsn(database_url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        session.execute(text("SELECT 1")).scalar_one()
        return {"ok": True}

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/test/read-always-lost")
        assert_problem(answer, 503, "internal_error")
        assert len(calls) == 2


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_write_that_lost_its_connection_is_never_run_again(app, database_url, method):
    """Whatever the method: a request that opened a write transaction is left to its
    client's retry (with its Idempotency-Key)."""
    _postgresql_only(database_url)
    calls: list[int] = []

    @app.api_route("/test/write", methods=[method])
    def write(session: WriteSession) -> dict:
        _kill_own_connection_once(database_url, session, calls)
        return {"ok": True}

    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.request(method, "/test/write")
        assert_problem(answer, 503, "internal_error")
        assert answer.headers["Retry-After"] == "2"
        assert len(calls) == 1
        # The next request gets a working connection.
        assert client.request(method, "/test/write").status_code == 200
        assert app.state.context.db.engine.pool.checkedout() == 0


def test_every_connection_killed_under_load_costs_no_500(make_app, database_url):
    """Four clients mixing account reads and listing posts while every server process of
    the database is terminated, again and again (what a restart does to open
    connections): 2xx or 503 only, each 503'd post lands once when retried with its key,
    and the money adds up."""
    _postgresql_only(database_url)
    app = make_app(metrics_enabled=True)
    statuses: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()
    with serving(app) as (base, _port), httpx.Client(base_url=base, timeout=30) as client:
        sellers = [register(client) for _ in range(4)]
        for seller in sellers:
            fund(app, seller.account_id, 1000 * FEE, real_money=True)
        before = {s.account_id: balance(client, s) for s in sellers}
        posted = {s.account_id: 0 for s in sellers}

        def answered(status: int) -> None:
            with lock:
                statuses.append(status)
            assert status < 500 or status == 503

        def keep_going(seller) -> None:  # noqa: ANN001
            with httpx.Client(base_url=base, timeout=30) as own:
                while not stop.is_set():
                    answer = own.get("/v1/account", headers=seller.headers)
                    answered(answer.status_code)
                    key = new_key()
                    while True:  # the client's retry, with the same key
                        answer = post(own, seller, key)
                        answered(answer.status_code)
                        if answer.status_code != 503:
                            break
                        assert answer.headers["Retry-After"]
                        time.sleep(0.05)
                    assert answer.status_code == 201, answer.text
                    posted[seller.account_id] += 1

        with ThreadPoolExecutor(len(sellers)) as pool:
            running = [pool.submit(keep_going, s) for s in sellers]
            killed = 0
            for _ in range(8):
                time.sleep(0.3)
                killed += _terminate_backends(database_url)
            stop.set()
            for done in running:
                done.result()
        assert killed
        assert 500 not in statuses and all(s < 500 or s == 503 for s in statuses)
        for seller in sellers:
            assert (
                balance(client, seller)
                == before[seller.account_id] - FEE * posted[seller.account_id]
            )
        assert listing_count(app) == sum(posted.values())
        assert audit(app.state.context.db.engine).found.problem_count == 0
        unavailable = _metric(client, outages.DATABASE_UNREACHABLE)
        assert unavailable == statuses.count(503)


# --- what operators see ------------------------------------------------------------------

# Nothing listens on port 1 of the loopback: every connection is refused at once.
_REFUSED_REDIS = "redis://127.0.0.1:1/0"


@contextmanager
def _database_refused(app) -> Iterator[None]:  # noqa: ANN001
    """Every new checkout from the app's pool refused, as by a server that is down."""
    pool = app.state.context.db.engine.pool
    real = pool.connect

    def refused():  # noqa: ANN202
        raise psycopg.OperationalError("connection failed: Connection refused")

    pool.connect = refused
    app.state.context.part(Reachability)._found = None  # probe again, not from memory
    try:
        yield
    finally:
        pool.connect = real


def test_health_and_status_say_everything_is_reachable(app, client):
    health = client.get("/health").json()
    assert health["status"] == "ok"
    assert health["database"] == "reachable"
    assert health["redis"] == "not_configured"
    status = client.get("/status.json").json()
    assert status["dependencies"] == {"database": "reachable", "redis": "not_configured"}


def test_health_and_status_say_what_is_out_of_reach(make_app):
    """A worker whose database and Redis both refuse it: /health still answers 200 and
    says so, /status.json answers from no samples, and a request answers 503, counted."""
    app = make_app(redis_url=_REFUSED_REDIS, metrics_enabled=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        agent = register(client)
        with _database_refused(app):
            answer = client.get("/health")
            assert answer.status_code == 200
            assert answer.json()["status"] == "degraded"
            assert answer.json()["database"] == "unreachable"
            assert answer.json()["redis"] == "unreachable"
            status = client.get("/status.json")
            assert status.status_code == 200, status.text
            assert status.json()["dependencies"] == {
                "database": "unreachable",
                "redis": "unreachable",
            }
            assert status.json()["components"][0]["state"] == "no_data"
            refused = client.get("/v1/account", headers=agent.headers)
            assert_problem(refused, 503, "internal_error")
            assert refused.headers["Retry-After"] == "2"
            assert _metric(client, outages.DATABASE_UNREACHABLE) == 1
        app.state.context.part(Reachability)._found = None
        assert client.get("/health").json()["database"] == "reachable"
        assert client.get("/v1/account", headers=agent.headers).status_code == 200


def test_status_serves_its_last_document_while_the_database_is_out_of_reach(app, client):
    first = client.get("/status.json").json()
    with _database_refused(app), clock.travel(timedelta(minutes=1)):  # past its cache
        answer = client.get("/status.json")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["dependencies"]["database"] == "unreachable"
    assert {k: v for k, v in body.items() if k != "dependencies"} == {
        k: v for k, v in first.items() if k != "dependencies"
    }
