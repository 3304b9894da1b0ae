"""Prepared statements (agent_broker.db.prepared) on SQLite and PostgreSQL: the columns'
types, defaults, the session's pending changes and transaction, and errors as SQLAlchemy
raises them, with their parameters hidden."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError

from agent_broker.accounts.models import Account
from agent_broker.db.prepared import Prepared, inserting
from agent_broker.idempotency.models import IdempotencyRecord
from tests.support.accounts import NEW_ACCOUNT

_accounts = Account.__table__
_records = IdempotencyRecord.__table__
_ACCOUNT = Prepared(select(_accounts).where(_accounts.c.id == bindparam("id")))
_RECORD_BY_KEY = Prepared(select(_records.c.id).where(_records.c.key == bindparam("key")))
SECRET = "hash-that-must-not-appear-in-errors-5d1c"


def _new_account(session, *, key_hash: str | None = None, created_at: datetime) -> str:
    account_id = str(uuid.uuid4())
    NEW_ACCOUNT.execute(
        session,
        id=account_id,
        handle=uuid.uuid4().hex[:12],
        key_hash=key_hash or uuid.uuid4().hex,
        created_at=created_at,
    )
    return account_id


def test_datetimes_go_in_as_utc_and_come_back_aware_and_defaults_fill_columns(db):
    created = datetime(2026, 3, 1, 14, 30, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    with db.writer() as session:
        account_id = _new_account(session, created_at=created)
        session.commit()
    with db.reader() as session:
        row = _ACCOUNT.one(session, id=account_id)
    assert row.created_at == created
    assert row.created_at.tzinfo == UTC
    assert row.status == "active"
    assert row.contact_email is None


def test_a_parameter_the_statement_has_no_place_for_is_refused(db):
    # A value for a column missing from the statement would otherwise vanish silently.
    with db.writer() as session, pytest.raises(TypeError, match="no parameter contact_email"):
        NEW_ACCOUNT.execute(
            session,
            id=str(uuid.uuid4()),
            handle=uuid.uuid4().hex[:12],
            key_hash=uuid.uuid4().hex,
            created_at=datetime.now(UTC),
            contact_email="ops@agents.dev",
        )
    with db.reader() as session, pytest.raises(TypeError, match="no parameter key"):
        _ACCOUNT.one_or_none(session, id="x", key="y")


def test_a_naive_datetime_is_refused_before_reaching_the_database(db):
    with db.writer() as session, pytest.raises(ValueError, match="naive"):
        _new_account(session, created_at=datetime(2026, 3, 1, 12, 0))


def test_a_constraint_violation_is_an_integrity_error_without_its_parameters(db, database_url):
    with db.writer() as session:
        _new_account(session, key_hash=SECRET, created_at=datetime.now(UTC))
        with pytest.raises(IntegrityError) as failed:
            _new_account(session, key_hash=SECRET, created_at=datetime.now(UTC))
        session.rollback()
    message = str(failed.value)
    assert "accounts" in message  # the statement is there to debug with
    assert "[parameters" not in message  # SQLAlchemy's rendering of the bound values
    assert failed.value.params is None
    if database_url.startswith("sqlite"):
        assert SECRET not in message and SECRET not in repr(failed.value)
    # PostgreSQL's own DETAIL line names the conflicting key's value; that part of the
    # message is the server's, not the parameters'.


def test_pending_orm_changes_are_flushed_before_a_prepared_statement(db):
    with db.writer() as session:
        session.add(
            IdempotencyRecord(
                scope="s",
                route="POST /x",
                key="pending-key",
                request_hash="0" * 64,
                response_status=0,
                response_body="",
                created_at=datetime.now(UTC),
            )
        )
        assert _RECORD_BY_KEY.one_or_none(session, key="pending-key") is not None
        session.rollback()


def test_statements_follow_the_session_across_its_transactions(db):
    with db.writer() as session:
        first = _new_account(session, created_at=datetime.now(UTC))
        session.rollback()  # the first transaction's work is gone with it
        second = _new_account(session, created_at=datetime.now(UTC))
        session.commit()
        third = _new_account(session, created_at=datetime.now(UTC))  # a new transaction
        session.commit()
    with db.reader() as session:
        assert _ACCOUNT.one_or_none(session, id=first) is None
        assert _ACCOUNT.one(session, id=second).id == second
        assert _ACCOUNT.one(session, id=third).id == third


def test_an_insert_of_every_column_returns_the_row_written(db):
    statement = inserting(_records, returning=True)
    now = datetime.now(UTC)
    with db.writer() as session:
        row = statement.one(
            session,
            scope="s",
            route="POST /y",
            key="k",
            request_hash="1" * 64,
            response_status=201,
            response_body="{}",
            created_at=now,
        )
        session.rollback()
    assert row.id is not None  # the autoincrement key is the database's
    assert (row.key, row.response_status, row.created_at) == ("k", 201, now)


def test_expanding_in_parameters_are_refused_when_compiled(db):
    statement = Prepared(
        select(_accounts.c.id).where(_accounts.c.id.in_(bindparam("ids", expanding=True)))
    )
    with db.reader() as session, pytest.raises(ValueError, match="expanding"):
        statement.all(session, ids=["a"])
