"""Engine settings that keep data out of error messages, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from agent_broker.db.engine import create_database

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
