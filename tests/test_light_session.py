"""Light read sessions (agent_broker.db.light) on SQLite and PostgreSQL: prepared
statements and ORM work of one session share one DBAPI connection and so one
transaction, every way out hands the connection back to the pool, and a read transaction
never outlives its session."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, insert, select

from agent_broker.accounts.models import Account
from agent_broker.db.engine import create_database
from agent_broker.db.light import LightSession
from agent_broker.db.prepared import Prepared
from tests.support.accounts import NEW_ACCOUNT

_accounts = Account.__table__
_COUNT = Prepared(select(_accounts.c.id).where(_accounts.c.handle == bindparam("handle")))


def _add_account(db, handle: str) -> None:
    with db.writer() as session:
        session.execute(
            insert(_accounts).values(
                id=str(uuid.uuid4()),
                handle=handle,
                api_key_hash=uuid.uuid4().hex,
                key_preview="ab_l...0000",
                created_at=datetime.now(UTC),
            )
        )
        session.commit()


def test_readers_are_light(db):
    with db.reader() as session:
        assert isinstance(session, LightSession)


def test_prepared_and_orm_work_share_one_connection(db):
    with db.reader() as session:
        raw = session.dbapi_connection()
        assert session.connection().connection.dbapi_connection is raw
        assert session.execute(select(_accounts.c.id)).all() == []
        assert session.dbapi_connection() is raw


def test_one_snapshot_across_prepared_and_orm_reads(db):
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL reads at READ COMMITTED: each statement sees the latest commit")
    with db.reader() as session:
        assert _COUNT.all(session, handle="snapshot01") == []  # the snapshot starts here
        _add_account(db, "snapshot01")
        orm_view = session.execute(select(_accounts.c.id).where(_accounts.c.handle == "snapshot01"))
        assert orm_view.all() == []
    with db.reader() as later:
        assert len(_COUNT.all(later, handle="snapshot01")) == 1


@pytest.mark.parametrize("orm", [False, True], ids=["prepared-only", "with-orm"])
@pytest.mark.parametrize("end", ["commit", "rollback", "close"])
def test_every_end_returns_the_connection_and_ends_the_transaction(db, orm, end):
    pool = db.engine.pool
    before = pool.checkedout()
    session = db.reader()
    raw = session.dbapi_connection()
    assert pool.checkedout() == before + 1
    _COUNT.all(session, handle="nobody")
    if orm:
        session.execute(select(_accounts.c.id)).all()
    if end != "close":
        getattr(session, end)()
        if db.engine.dialect.name == "sqlite":
            assert not raw.in_transaction
        else:
            assert raw.info.transaction_status == 0  # psycopg: idle, no transaction open
    session.close()
    assert pool.checkedout() == before


def test_a_session_used_again_after_commit_begins_again(db):
    with db.reader() as session:
        _COUNT.all(session, handle="nobody")
        session.commit()
        _add_account(db, "afterward01")
        assert len(_COUNT.all(session, handle="afterward01")) == 1
        if db.engine.dialect.name == "sqlite":
            assert session.dbapi_connection().in_transaction


def test_an_unreachable_database_raises_as_sqlalchemy_does(make_settings):
    from sqlalchemy.exc import OperationalError

    # Nothing listens on port 1: the connection is refused at once.
    url = "postgresql+psycopg://broker@127.0.0.1:1/broker"
    unreachable = create_database(make_settings(database_url=url))
    try:
        for factory in (unreachable.reader, unreachable.writer):
            with factory() as session, pytest.raises(OperationalError):
                session.dbapi_connection()
    finally:
        unreachable.dispose()


def test_statements_serve_after_a_refused_statement_and_a_new_transaction(db):
    from sqlalchemy.exc import IntegrityError

    values = {"id": str(uuid.uuid4()), "handle": "cursor01", "key_hash": "h" * 64}
    with db.writer() as session:
        NEW_ACCOUNT.execute(session, created_at=datetime.now(UTC), **values)
        session.commit()
        with pytest.raises(IntegrityError):
            NEW_ACCOUNT.execute(session, created_at=datetime.now(UTC), **values)
        session.rollback()
        # Same session, a new transaction, the statements prepared before the refusal: they
        # still read, write and commit.
        assert len(_COUNT.all(session, handle="cursor01")) == 1
        values.update(id=str(uuid.uuid4()), handle="cursor02", key_hash="i" * 64)
        NEW_ACCOUNT.execute(session, created_at=datetime.now(UTC), **values)
        session.commit()
    with db.reader() as later:
        assert len(_COUNT.all(later, handle="cursor02")) == 1
