"""PostgreSQL: TRUNCATE, which fires no row trigger, is refused on the journal and on the
chain's seals and checkpoints (migration 0009)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.support.ledger import APPEND_ONLY, checkpoints, entry_count, journal, seal_now, seals


@pytest.fixture
def sealed(app):
    if app.state.context.settings.is_sqlite:
        pytest.skip("SQLite has no TRUNCATE")
    journal(app, 2)
    seal_now(app)
    return app


def _intact(app) -> bool:
    return entry_count(app) == 2 and len(seals(app)) == 2 and len(checkpoints(app)) == 1


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_truncate_is_refused(sealed, table):
    with (
        sealed.state.context.db.engine.begin() as conn,
        pytest.raises(DBAPIError, match="append-only"),
    ):
        conn.execute(text(f"TRUNCATE {table} CASCADE"))
    assert _intact(sealed)


def test_a_truncate_cascading_from_the_books_is_refused(sealed):
    with (
        sealed.state.context.db.engine.begin() as conn,
        pytest.raises(DBAPIError, match="append-only"),
    ):
        conn.execute(text("TRUNCATE ledger_accounts CASCADE"))
    assert _intact(sealed)
