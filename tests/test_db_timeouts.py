"""Bounded database waits (agent_broker.db.timeouts): every PostgreSQL connection carries
the statement and lock limits from when it opens, on the ORM path and the libpq path
alike; the libpq path bounds its own wait for a server that does not answer; and a
request whose wait runs out answers 503 with a problem document and a Retry-After, its
transaction rolled back, while the worker goes on answering."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import errors
from sqlalchemy import bindparam, func, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from agent_broker.db import libpq
from agent_broker.db.engine import create_database, jobs_database
from agent_broker.db.light import LightSession
from agent_broker.db.prepared import Prepared
from agent_broker.db.timeouts import timed_out
from agent_broker.ledger import books
from agent_broker.ledger.audit import audit
from tests.support.accounts import balance, fund, register
from tests.support.http import assert_problem, new_key, serving, wait_until
from tests.support.market import FEE, LISTING, listing_count, post

_SLEEP = Prepared(select(func.pg_sleep(bindparam("seconds"))))
_SETTING = Prepared(select(func.current_setting(bindparam("name"))))
_PID = Prepared(select(func.pg_backend_pid()))
# A lock the test holds is released after this long whatever happens, so a request that
# does not give up by itself ends the wait (and fails the test) rather than hangs it.
RELEASE_AFTER_S = 6.0


def _postgresql_only(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's limits: SQLite's lock waits are bounded by its busy timeout")


def _dsn(database_url: str) -> str:
    return database_url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def _locked(database_url: str, sql: str, params: tuple) -> Iterator[None]:
    """Hold the row locks `sql` takes, from a connection of its own (as another worker, a
    job or the CLI would), until the block ends or RELEASE_AFTER_S has passed."""
    with psycopg.connect(_dsn(database_url)) as holder:
        holder.execute(sql, params)
        release = threading.Timer(RELEASE_AFTER_S, holder.rollback)
        release.start()
        try:
            yield
        finally:
            release.cancel()
            holder.rollback()


def _wallet_locked(database_url: str, account_id: str) -> AbstractContextManager[None]:
    return _locked(
        database_url,
        "SELECT 1 FROM ledger_accounts WHERE code = %s FOR UPDATE",
        (books.wallet_code(account_id),),
    )


def _waiting_on_a_lock(database_url: str) -> bool:
    with psycopg.connect(_dsn(database_url), autocommit=True) as watcher:
        row = watcher.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def _running(database_url: str, pid: int) -> str | None:
    """What the server process `pid` is doing: its state, or None once it is gone."""
    with psycopg.connect(_dsn(database_url), autocommit=True) as watcher:
        row = watcher.execute(
            "SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    return row[0] if row else None


# --- the limits every connection carries -----------------------------------------------


def test_every_connection_carries_the_limits_on_every_path(make_settings, database_url):
    _postgresql_only(database_url)
    settings = make_settings(db_statement_timeout_ms=4321, db_lock_timeout_ms=1234)
    db = create_database(settings)
    try:
        with db.reader() as session:
            # The libpq path (prepared statements) and the ORM path, on the same connection.
            assert _SETTING.scalar(session, name="statement_timeout") == "4321ms"
            assert _SETTING.scalar(session, name="lock_timeout") == "1234ms"
            assert session.execute(text("SHOW statement_timeout")).scalar_one() == "4321ms"
            assert session.execute(text("SHOW lock_timeout")).scalar_one() == "1234ms"
            # And the libpq path's own wait is bounded by the statement limit.
            bound = libpq.channel(session.dbapi_connection()).statement_wait
            assert bound == pytest.approx(4.321)
    finally:
        db.dispose()


def test_jobs_and_the_cli_have_the_longer_statement_limit(make_settings, database_url):
    _postgresql_only(database_url)
    from agent_broker.cli.common import open_database

    settings = make_settings(
        db_statement_timeout_ms=1000, db_lock_timeout_ms=700, db_job_statement_timeout_ms=90000
    )
    requests = create_database(settings)
    opened = [jobs_database(requests, settings), open_database(settings)]
    try:
        for db in opened:
            assert db is not requests
            with db.writer() as session:
                assert session.execute(text("SHOW statement_timeout")).scalar_one() == "90s"
                assert session.execute(text("SHOW lock_timeout")).scalar_one() == "700ms"
    finally:
        for db in (requests, *opened):
            db.dispose()


def test_migrations_keep_the_servers_own_limits(make_settings, database_url):
    _postgresql_only(database_url)
    db = create_database(make_settings(db_statement_timeout_ms=1000), work="migrations")
    try:
        with db.writer() as session:
            assert session.execute(text("SHOW statement_timeout")).scalar_one() == "0"
    finally:
        db.dispose()


@pytest.mark.parametrize("given_in", ["url", "PGOPTIONS"])
def test_server_options_given_elsewhere_are_kept(
    make_settings, database_url, monkeypatch, given_in
):
    """The limits go in the `options` connection parameter, which would otherwise replace
    what the URL or the PGOPTIONS environment variable asks of the server."""
    _postgresql_only(database_url)
    url = database_url
    if given_in == "url":
        url = f"{database_url}?options=-c%20work_mem%3D7MB"
    else:
        monkeypatch.setenv("PGOPTIONS", "-c work_mem=7MB")
    db = create_database(make_settings(database_url=url, db_statement_timeout_ms=2500))
    try:
        with db.reader() as session:
            assert session.execute(text("SHOW work_mem")).scalar_one() == "7MB"
            assert session.execute(text("SHOW statement_timeout")).scalar_one() == "2500ms"
    finally:
        db.dispose()


# --- limits running out ----------------------------------------------------------------


def test_a_statement_past_the_limit_is_cancelled_on_both_paths(make_settings, database_url):
    _postgresql_only(database_url)
    db = create_database(make_settings(db_statement_timeout_ms=200))
    try:
        with db.writer() as session:
            started = time.monotonic()
            with pytest.raises(OperationalError) as through_libpq:
                _SLEEP.all(session, seconds=3)
            session.rollback()
            with pytest.raises(OperationalError) as through_orm:
                session.execute(text("SELECT pg_sleep(3)"))
            session.rollback()
            assert time.monotonic() - started < 2
            assert _SETTING.scalar(session, name="statement_timeout") == "200ms"  # serves on
        for raised in (through_libpq.value, through_orm.value):
            assert isinstance(raised.orig, errors.QueryCanceled)
            assert timed_out(raised)
    finally:
        db.dispose()


def test_a_lock_held_past_the_lock_limit_is_given_up(make_settings, database_url, app):
    _postgresql_only(database_url)
    with TestClient(app) as client:
        agent = register(client)
    db = create_database(make_settings(db_lock_timeout_ms=200))
    try:
        with _wallet_locked(database_url, agent.account_id), db.writer() as session:
            started = time.monotonic()
            with pytest.raises(OperationalError) as refused:
                session.execute(
                    text("UPDATE ledger_accounts SET held_micro = held_micro WHERE code = :c"),
                    {"c": books.wallet_code(agent.account_id)},
                )
            assert time.monotonic() - started < 2
        assert isinstance(refused.value.orig, errors.LockNotAvailable)
        assert timed_out(refused.value)
    finally:
        db.dispose()


def _session(db, kind: str):  # noqa: ANN001, ANN202
    return Session(db.engine) if kind == "plain" else db.writer()


def _dbapi_connection(session):  # noqa: ANN001, ANN202
    if isinstance(session, LightSession):
        return session.dbapi_connection()
    return session.connection().connection.dbapi_connection


@pytest.mark.parametrize("kind", ["light", "light_after_orm_work", "plain"])
def test_the_libpq_wait_is_bounded_and_its_connection_dropped(
    make_settings, database_url, monkeypatch, kind
):
    """A server that does not answer in time (here: one left to sleep with no limit of its
    own running out first) is cancelled, its connection closed and never reused, and the
    session rolls back without an error, whichever kind of session it is."""
    _postgresql_only(database_url)
    monkeypatch.setattr(libpq, "WAIT_MARGIN_S", 0.1)
    db = create_database(make_settings())
    try:
        with _session(db, kind) as session:
            connection = _dbapi_connection(session)
            pid = _PID.scalar(session)
            if kind == "light_after_orm_work":
                session.execute(text("SELECT 1"))
            libpq.bound_waits(connection, 0.1)  # the server's own limit is 5 s here
            started = time.monotonic()
            with pytest.raises(OperationalError) as expired:
                _SLEEP.all(session, seconds=30)
            assert time.monotonic() - started < 1.5
            assert isinstance(expired.value.orig, libpq.WaitExpired)
            assert timed_out(expired.value)
            assert connection.closed
            session.rollback()  # nothing to roll back on a closed connection: no error
        # The server stopped the statement at once (the cancel), not at its own limit, and
        # the session is gone with it.
        wait_until(lambda: _running(database_url, pid) is None, "the server process ends", 2.5)
        with _session(db, kind) as session:
            assert _PID.scalar(session) != pid  # a new connection, not the dropped one
        assert db.engine.pool.checkedout() == 0
    finally:
        db.dispose()


# --- what a request answers ------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [
        {"db_lock_timeout_ms": 300, "db_statement_timeout_ms": 5000},
        {"db_lock_timeout_ms": 0, "db_statement_timeout_ms": 300},
    ],
    ids=["lock_timeout", "statement_timeout"],
)
def test_a_write_that_waits_too_long_answers_503_and_writes_nothing(
    make_app, database_url, limits, monkeypatch
):
    _postgresql_only(database_url)
    monkeypatch.setattr(libpq, "WAIT_MARGIN_S", 30.0)  # the server's limit answers first
    app = make_app(**limits)
    with TestClient(app, raise_server_exceptions=False) as client:
        seller = register(client)
        fund(app, seller.account_id, 10 * FEE, real_money=True)
        before = balance(client, seller)
        key = new_key()
        with _wallet_locked(database_url, seller.account_id):
            started = time.monotonic()
            answer = post(client, seller, key)
            elapsed = time.monotonic() - started
        body = assert_problem(answer, 503, "internal_error")
        assert answer.headers["Retry-After"] == "1"
        assert "retry" in body["detail"]
        assert elapsed < 3
        # Rolled back whole: no charge, no listing, the books balance.
        assert balance(client, seller) == before
        assert listing_count(app) == 0
        assert audit(app.state.context.db.engine).found.problem_count == 0
        # The same request once the lock is gone runs once, and charges once.
        assert post(client, seller, key).status_code == 201
        assert post(client, seller, key).status_code == 201  # the replay
        assert balance(client, seller) == before - FEE
        assert listing_count(app) == 1


def test_health_answers_while_a_write_waits_on_a_lock(make_app, database_url):
    """Inline dispatch runs the write's wait on the worker's event loop: bounded, the
    worker answers again within the lock limit, long before the lock is let go."""
    _postgresql_only(database_url)
    app = make_app(db_lock_timeout_ms=1000)
    assert app.state.context.settings.db_dispatch == "inline"
    with serving(app) as (base, _port), httpx.Client(base_url=base, timeout=20) as client:
        seller = register(client)
        fund(app, seller.account_id, 10 * FEE, real_money=True)
        headers = {**seller.headers, "Idempotency-Key": new_key()}
        with _wallet_locked(database_url, seller.account_id), ThreadPoolExecutor(1) as pool:
            posting = pool.submit(client.post, "/v1/listings", json=LISTING, headers=headers)
            wait_until(lambda: _waiting_on_a_lock(database_url), "the post waits for the lock")
            started = time.monotonic()
            health = httpx.get(f"{base}/health", timeout=RELEASE_AFTER_S - 2)
            assert health.status_code == 200
            assert time.monotonic() - started < 2.5
            assert_problem(posting.result(), 503, "internal_error")


def test_only_a_wait_that_ran_out_is_a_503(app, client):
    """The mapping, on both databases: other database failures stay server faults (500)."""

    def raising(orig: Exception):  # noqa: ANN202
        def route() -> None:
            raise OperationalError("SELECT 1", {}, orig)

        return route

    app.get("/test/lock-timeout")(raising(errors.LockNotAvailable("lock timeout")))
    app.get("/test/statement-timeout")(raising(errors.QueryCanceled("statement timeout")))
    app.get("/test/no-answer")(raising(libpq.WaitExpired("no answer")))
    app.get("/test/other")(raising(errors.DiskFull("disk full")))
    for path in ("/test/lock-timeout", "/test/statement-timeout", "/test/no-answer"):
        answer = client.get(path)
        assert_problem(answer, 503, "internal_error")
        assert answer.headers["Retry-After"] == "1"
    assert_problem(client.get("/test/other"), 500, "internal_error")
