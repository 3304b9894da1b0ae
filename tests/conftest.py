"""Test harness: every test that takes `client` or `app` runs once against SQLite and once
against PostgreSQL. PostgreSQL tests get a database of their own, created for the run and
dropped after it, so parallel runs never collide. Without a reachable server those tests
are skipped and the run says so; with BROKER_TEST_REQUIRE_POSTGRES=1 (CI) they fail.

What tests share beyond these fixtures lives in tests/support
(docs/contributors/architecture.md, "Layout"): its fixture modules are loaded for every
test through `pytest_plugins` below.
"""

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

from agent_broker import clock
from agent_broker.app import create_app
from agent_broker.config import Settings
from agent_broker.migrations.migrate import upgrade
from tests.support.http import serving
from tests.support.settings import PG_ADMIN_DSN, PUBLIC_BASE_URL, TEST_SECRET

pytest_plugins = [
    "tests.support.fixtures.cli",
    "tests.support.fixtures.database",
    "tests.support.fixtures.domains",
    "tests.support.fixtures.identity",
    "tests.support.fixtures.market",
    "tests.support.fixtures.payments",
    "tests.support.fixtures.x402",
]

REQUIRE_PG = os.environ.get("BROKER_TEST_REQUIRE_POSTGRES") == "1"
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


# Empties the test database between tests in one round trip: every table's rows deleted
# with triggers and foreign keys off (session_replication_role = replica: the append-only
# guards of the journal and the chain, migration 0009, stay out of it), the sequences of
# those tables restarted, the operator's books zeroed. DELETE costs next to nothing on the
# few rows a test writes, where TRUNCATE made new files for every table each time (about
# fifty times slower, measured: close to a second a test on a busy machine).
_EMPTY = """
DO $$
DECLARE
    name text;
BEGIN
    SET LOCAL session_replication_role = replica;
    FOR name IN
        SELECT tablename FROM pg_tables
        WHERE schemaname = 'public' AND tablename NOT IN ('alembic_version', 'ledger_accounts')
    LOOP
        EXECUTE format('DELETE FROM %I', name);
    END LOOP;
    FOR name IN
        SELECT s.relname FROM pg_class s
        JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i')
        JOIN pg_class t ON t.oid = d.refobjid
        WHERE s.relkind = 'S' AND t.relname <> 'ledger_accounts'
    LOOP
        EXECUTE format('ALTER SEQUENCE %I RESTART', name);
    END LOOP;
    DELETE FROM ledger_accounts WHERE kind = 'wallet';
    UPDATE ledger_accounts SET total_micro = 0, held_micro = 0;
END
$$
"""


@pytest.fixture(scope="session")
def pg_empty(pg_database: str) -> Iterator[Callable[[], None]]:
    """Empty the test database (_EMPTY), over a connection kept for the run."""
    dsn = pg_database.replace("postgresql+psycopg://", "postgresql://", 1)
    held: list[psycopg.Connection] = []

    def empty() -> None:
        if not held or held[0].closed or held[0].broken:
            held[:] = [psycopg.connect(dsn, autocommit=True)]
        try:
            held[0].execute(_EMPTY)
        except psycopg.OperationalError:
            # A test terminated the database's server processes, this one's too
            # (tests/test_outages.py): a fresh connection.
            held[:] = [psycopg.connect(dsn, autocommit=True)]
            held[0].execute(_EMPTY)

    yield empty
    for conn in held:
        conn.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "broker.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"
    request.getfixturevalue("pg_empty")()
    return request.getfixturevalue("pg_database")


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
            "public_base_url": PUBLIC_BASE_URL,
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
        app.state.context.db.dispose()


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
