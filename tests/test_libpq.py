"""Prepared statements through libpq on PostgreSQL (agent_broker.db.libpq): the BEGIN goes
with the first statement, queued statements go with the next round trip or the COMMIT and
are dropped on a rollback, their errors surface as SQLAlchemy's, and the names prepared on
a connection stay in step with the server. On SQLite a queued statement runs at once."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from psycopg import pq
from sqlalchemy import bindparam, select, text
from sqlalchemy.exc import IntegrityError, ProgrammingError

from agent_broker.accounts.models import Account
from agent_broker.db import libpq
from agent_broker.db.prepared import Prepared
from tests.support.accounts import NEW_ACCOUNT

_accounts = Account.__table__
_HANDLES = Prepared(
    select(_accounts.c.handle)
    .where(_accounts.c.handle.like(bindparam("prefix") + "%"))
    .order_by(_accounts.c.handle)
)
# A statement the server refuses when it is prepared (no such column).
_BROKEN = Prepared(select(text("no_such_column")).select_from(_accounts))


def _new(session, handle: str, **extra) -> None:
    values = {"id": str(uuid.uuid4()), "handle": handle, "key_hash": uuid.uuid4().hex, **extra}
    NEW_ACCOUNT.queue(session, created_at=datetime.now(UTC), **values)


def _handles(db, prefix: str) -> list[str]:
    with db.reader() as session:
        return [row.handle for row in _HANDLES.all(session, prefix=prefix)]


def _postgresql_only(db) -> None:
    if db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite runs statements in process: nothing goes through libpq")


def test_a_queued_statement_runs_before_the_next_one_and_commits_with_the_session(db):
    with db.writer() as session:
        _new(session, "queued01")
        _new(session, "queued02")
        if db.engine.dialect.name == "postgresql":
            assert len(session.queued) == 2  # nothing sent yet
        # The next statement of the session sees them: they went first, in order.
        assert [r.handle for r in _HANDLES.all(session, prefix="queued")] == [
            "queued01",
            "queued02",
        ]
        assert session.queued == []
        _new(session, "queued03")
        session.commit()  # goes with the COMMIT
    assert _handles(db, "queued") == ["queued01", "queued02", "queued03"]


def test_queued_statements_are_dropped_by_a_rollback_and_by_a_close(db):
    with db.writer() as session:
        _new(session, "dropped1")
        session.rollback()
        assert session.queued == []
        _new(session, "dropped2")
    assert _handles(db, "dropped") == []
    with db.writer() as session:  # the connection serves on, nothing left over
        _new(session, "dropped3")
        session.commit()
    assert _handles(db, "dropped") == ["dropped3"]


def _refused_later(db, session, handle: str, step) -> None:
    """Queue a statement the database refuses: on PostgreSQL `step` raises its error, on
    SQLite (where it runs at once) the queueing does."""
    if db.engine.dialect.name == "sqlite":
        with pytest.raises(IntegrityError):
            _new(session, handle)
        return
    _new(session, handle)
    with pytest.raises(IntegrityError):
        step()


def test_a_queued_statements_error_is_raised_at_the_commit_and_nothing_lands(db):
    with db.writer() as session:
        _new(session, "clash001")
        session.commit()
    with db.writer() as session:
        _new(session, "clash002")
        _refused_later(db, session, "clash001", session.commit)  # the handle is taken
        session.rollback()
    assert _handles(db, "clash") == ["clash001"]


def test_a_queued_statements_error_is_raised_by_the_next_statement(db):
    with db.writer() as session:
        _new(session, "next0001")
        _refused_later(db, session, "next0001", lambda: _HANDLES.all(session, prefix="next"))
        session.rollback()
        # The session goes on in a new transaction.
        _new(session, "next0002")
        session.commit()
    assert _handles(db, "next") == ["next0002"]


def test_orm_work_after_queued_statements_sees_them(db):
    with db.writer() as session:
        _new(session, "ormsees1")
        found = session.execute(select(_accounts.c.handle).where(_accounts.c.handle == "ormsees1"))
        assert found.scalar_one() == "ormsees1"
        _new(session, "ormsees2")
        session.commit()
    assert _handles(db, "ormsees") == ["ormsees1", "ormsees2"]


def test_the_first_statement_begins_the_transaction_it_runs_in(db):
    _postgresql_only(db)
    with db.writer() as session:
        connection = session.dbapi_connection()
        assert connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
        _HANDLES.all(session, prefix="none")
        assert connection.pgconn.transaction_status == pq.TransactionStatus.INTRANS
        _new(session, "begun001")
        _HANDLES.all(session, prefix="none")
        session.rollback()
        assert connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
    assert _handles(db, "begun") == []


def test_names_survive_a_rollback_and_a_refused_prepare_is_not_kept(db):
    _postgresql_only(db)
    with db.writer() as session:
        connection = session.dbapi_connection()
        _HANDLES.all(session, prefix="x")
        names = dict(libpq.channel(connection).names)
        session.rollback()
        for _ in range(2):
            # The same refusal each time, never "prepared statement does not exist".
            with pytest.raises(ProgrammingError, match="no_such_column"):
                _BROKEN.all(session)
            session.rollback()
        assert libpq.channel(connection).names == names
        assert _HANDLES.all(session, prefix="x") == []  # prepared before the rollback


def test_statements_deallocated_behind_its_back_are_prepared_again(db):
    _postgresql_only(db)
    with db.writer() as session:
        connection = session.dbapi_connection()
        _HANDLES.all(session, prefix="x")
        session.rollback()
        connection.execute("DEALLOCATE ALL")
        connection.commit()
        with pytest.raises(ProgrammingError, match="does not exist"):
            _HANDLES.all(session, prefix="x")
        session.rollback()
        assert _HANDLES.all(session, prefix="x") == []


def test_psycopg_prepares_nothing_of_its_own(db):
    # psycopg deallocates every statement of a connection after a rollback when it has
    # prepared any itself, which would take this module's names with them.
    _postgresql_only(db)
    with db.writer() as session:
        assert session.dbapi_connection().prepare_threshold is None


def test_plain_sessions_run_prepared_statements_through_libpq_too(db):
    from sqlalchemy.orm import Session

    with Session(db.engine) as session:
        values = {"id": str(uuid.uuid4()), "handle": "plain001", "key_hash": "p" * 64}
        NEW_ACCOUNT.queue(session, created_at=datetime.now(UTC), **values)  # runs at once
        assert [r.handle for r in _HANDLES.all(session, prefix="plain")] == ["plain001"]
        session.commit()
    assert _handles(db, "plain") == ["plain001"]


def test_a_queued_insert_gives_the_row_the_database_writes(db):
    from agent_broker.db.prepared import inserting

    insert_account = inserting(_accounts, returning=True)
    values = {column.key: None for column in _accounts.c}
    values.update(
        id=str(uuid.uuid4()),
        handle="rowmade1",
        api_key_hash="r" * 64,
        key_preview="ab_l...0000",
        status="active",
        created_at=datetime(2026, 11, 27, 1, 2, 3, 456789, tzinfo=UTC),
        contact_email="ops@example.com",
    )
    with db.writer() as session:
        with pytest.raises(TypeError, match="every column"):
            insert_account.queue_row(session, **{k: v for k, v in values.items() if k != "status"})
        made = insert_account.queue_row(session, **values)
        session.commit()
    with db.reader() as session:
        written = Prepared(select(*_accounts.c).where(_accounts.c.id == bindparam("id")))
        assert tuple(made) == tuple(written.one(session, id=values["id"]))


def test_reads_sent_later_come_back_with_the_next_round_trip(db):
    with db.writer() as session:
        _new(session, "later001")
        first = _HANDLES.later(session, prefix="later")
        _new(session, "later002")
        second = _HANDLES.later(session, prefix="later")
        if db.engine.dialect.name == "postgresql":
            assert len(session.queued) == 4  # nothing sent yet
        # Each read saw what was sent before it, and nothing after.
        assert [r.handle for r in second.all()] == ["later001", "later002"]
        assert session.queued == []  # one round trip took them all
        assert [r.handle for r in first.all()] == ["later001"]
        assert first.one_or_none().handle == "later001"
        session.commit()


def test_a_read_dropped_with_its_transaction_says_so(db):
    _postgresql_only(db)
    with db.writer() as session:
        dropped = _HANDLES.later(session, prefix="none")
        session.rollback()
        with pytest.raises(RuntimeError, match="dropped"):
            dropped.all()
