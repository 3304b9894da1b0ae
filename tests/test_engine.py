"""Engine settings that keep data out of error messages, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from agent_broker.db.engine import Database, create_database

SECRET = "s3cret-bound-value-7f3a"


def test_database_errors_do_not_carry_bound_parameters(make_settings):
    db = create_database(make_settings())
    try:
        with db.reader() as session, pytest.raises(DBAPIError) as failed:
            session.execute(
                text("SELECT id FROM no_such_table WHERE id = :value"), {"value": SECRET}
            )
    finally:
        db.dispose()
    message = str(failed.value)
    assert "no_such_table" in message  # the statement is still there to debug with
    assert SECRET not in message
    assert SECRET not in repr(failed.value)


def _backend_pids(db: Database) -> set[int]:
    """Open every pooled connection at once and give them back; their server processes."""
    sessions = [db.reader() for _ in range(3)]
    try:
        return {s.execute(text("SELECT pg_backend_pid()")).scalar_one() for s in sessions}
    finally:
        for session in sessions:
            session.close()


def test_pooled_connections_the_server_closed_are_replaced_on_checkout(make_settings, client):
    """A restart or pg_terminate_backend closes idle pooled connections; the next request
    must get a live one (as with SQLAlchemy's pre-ping), not a 500."""
    app = client.app
    if app.state.context.settings.is_sqlite:
        pytest.skip("PostgreSQL's connections")
    made = client.post("/v1/account/register", json={"accepted_terms": True})
    assert made.status_code == 201
    headers = {"x-api-key": made.json()["api_key"]}
    pooled = _backend_pids(app.state.context.db)
    assert len(pooled) == 3
    admin = create_database(make_settings())
    try:
        with admin.writer() as session:
            for pid in pooled:
                session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        admin.dispose()
    for _ in range(5):
        assert client.get("/v1/account", headers=headers).status_code == 200
    assert not pooled & _backend_pids(app.state.context.db)


def test_a_live_pooled_connection_is_kept(make_settings):
    db = create_database(make_settings())
    try:
        if db.engine.dialect.name != "postgresql":
            pytest.skip("PostgreSQL's connections")
        first = _backend_pids(db)
        assert _backend_pids(db) == first
    finally:
        db.dispose()
