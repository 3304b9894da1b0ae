"""Test harness: every test that takes `client` or `app` runs once against SQLite and once
against PostgreSQL. PostgreSQL tests get a database of their own, created for the run and
dropped after it, so parallel runs never collide. Without a reachable server those tests
are skipped and the run says so; with BROKER_TEST_REQUIRE_POSTGRES=1 (CI) they fail."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from agent_broker import clock
from agent_broker.app import create_app
from agent_broker.config import Settings
from agent_broker.migrations.migrate import upgrade
from tests.helpers import serving

PG_ADMIN_DSN = os.environ.get(
    "BROKER_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("BROKER_TEST_REQUIRE_POSTGRES") == "1"
TEST_SECRET = "test-key-hash-secret-0123456789abcdef"
_pg_skip_reason: list[str] = []


def _pg_available() -> str | None:
    try:
        with psycopg.connect(PG_ADMIN_DSN, connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001
        return f"PostgreSQL not reachable at {PG_ADMIN_DSN}: {type(exc).__name__}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    reason = _pg_available()
    if reason:
        if REQUIRE_PG:
            pytest.fail(reason + " (BROKER_TEST_REQUIRE_POSTGRES=1)")
        _pg_skip_reason.append(reason)
        pytest.skip(reason)
    name = f"broker_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_DSN.rsplit("/", 1)[0]
    url = f"{base.replace('postgresql://', 'postgresql+psycopg://', 1)}/{name}"
    upgrade(url)
    yield url
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# User triggers that refuse TRUNCATE (the journal and the chain's tables, migration 0009).
_TRUNCATE_TRIGGERS = text(
    "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "WHERE NOT t.tgisinternal AND (t.tgtype & 32) <> 0"
)


def _reset_postgres(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        tables = [
            row[0]
            for row in conn.execute(
                text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                    "AND tablename NOT IN ('alembic_version', 'ledger_accounts')"
                )
            )
        ]
        # Emptying the test database is the one TRUNCATE allowed: the triggers are off
        # only inside this transaction.
        guards = conn.execute(_TRUNCATE_TRIGGERS).all()
        for table, trigger in guards:
            conn.execute(text(f'ALTER TABLE "{table}" DISABLE TRIGGER "{trigger}"'))
        if tables:
            conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
        for table, trigger in guards:
            conn.execute(text(f'ALTER TABLE "{table}" ENABLE TRIGGER "{trigger}"'))
        conn.execute(text("DELETE FROM ledger_accounts WHERE kind = 'wallet'"))
        conn.execute(text("UPDATE ledger_accounts SET total_micro = 0, held_micro = 0"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "broker.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"
    url = request.getfixturevalue("pg_database")
    _reset_postgres(url)
    return url


@pytest.fixture(autouse=True)
def _reset_clock() -> Iterator[None]:
    clock.reset()
    yield
    clock.reset()


@pytest.fixture
def make_settings(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "database_url": database_url,
            "var_dir": str(tmp_path / "var"),
            "key_hash_secret": TEST_SECRET,
            "register_rate_limit": "10000/hour",
            "public_base_url": "https://broker.test",
            "jobs_enabled": False,
        }
        values.update(overrides)
        return Settings(**values)

    return build


@pytest.fixture
def make_app(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., FastAPI]]:
    made: list[FastAPI] = []

    def build(**overrides: Any) -> FastAPI:
        app = create_app(make_settings(**overrides), run_jobs=False)
        made.append(app)
        return app

    yield build
    for app in made:
        app.state.db.dispose()


@pytest.fixture
def app(make_app: Callable[..., FastAPI]) -> FastAPI:
    return make_app()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def live_server(app: FastAPI) -> Iterator[str]:
    """The app served by a real uvicorn on a loopback port, for concurrent requests."""
    with serving(app) as (base_url, _port):
        yield base_url


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _pg_skip_reason:
        terminalreporter.write_line(
            f"NOTE: the PostgreSQL suite was skipped ({_pg_skip_reason[0]}); "
            "only SQLite was tested.",
            yellow=True,
        )
