"""A light session's transaction that ran only prepared statements tells the session's
event listeners what the ORM's transaction would (agent_broker.db.light), on SQLite and on
PostgreSQL's libpq path, once each, and costs nothing when nobody listens."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import bindparam, event, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, SessionTransaction

from agent_broker.accounts.models import Account
from agent_broker.db.engine import Database, create_database
from agent_broker.db.light import LightSession
from agent_broker.db.prepared import Prepared
from tests.support.accounts import NEW_ACCOUNT

_accounts = Account.__table__
_BY_HANDLE = Prepared(select(_accounts.c.id).where(_accounts.c.handle == bindparam("handle")))
_TOLD = ("after_begin", "after_commit", "after_rollback")
_OBJECTS = ("after_transaction_create", "after_transaction_end")


@pytest.fixture
def db(make_settings: Any) -> Iterator[Database]:
    database = create_database(make_settings())
    yield database
    database.dispose()


class Heard:
    """The events of the session class or factory `target`, as (name, its arguments)."""

    def __init__(self, target: Any, names: tuple[str, ...]) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._listening = [(target, name, self._listener(name)) for name in names]
        for listening in self._listening:
            event.listen(*listening)

    def _listener(self, name: str) -> Any:
        def heard(*args: Any) -> None:
            self.calls.append((name, args))

        return heard

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def remove(self) -> None:
        for listening in self._listening:
            event.remove(*listening)


def _new_account(session: Session, account_id: str | None = None) -> None:
    handle = f"ev{uuid.uuid4().hex[:10]}"
    NEW_ACCOUNT.execute(
        session,
        id=account_id or str(uuid.uuid4()),
        handle=handle,
        key_hash=uuid.uuid4().hex,
        created_at=datetime.now(UTC),
    )


def _stored(db: Database) -> int:
    with db.reader() as session:
        return len(session.execute(select(_accounts.c.id)).all())


@pytest.mark.parametrize("on", ["factory", "class"])
def test_begin_and_commit_of_prepared_statements_are_told(db: Database, on: str) -> None:
    heard = Heard(db.writer if on == "factory" else LightSession, _TOLD)
    try:
        with db.writer() as session:
            _new_account(session)
            assert _BY_HANDLE.all(session, handle="nobody") == []
            assert heard.names() == ["after_begin"]
            name, (told_session, transaction, connection) = heard.calls[0]
            assert told_session is session
            assert isinstance(transaction, SessionTransaction)
            assert transaction is session.get_transaction()
            assert isinstance(connection, Connection)
            assert connection.connection.dbapi_connection is session.dbapi_connection()
            session.commit()
            assert heard.names() == ["after_begin", "after_commit"]
            assert heard.calls[1][1] == (session,)
    finally:
        heard.remove()
    assert _stored(db) == 1


@pytest.mark.parametrize("end", ["rollback", "failed statement"])
def test_a_rollback_of_prepared_statements_is_told(db: Database, end: str) -> None:
    heard = Heard(db.writer, _TOLD)
    try:
        with db.writer() as session:
            account_id = str(uuid.uuid4())
            _new_account(session, account_id)
            if end == "failed statement":
                with pytest.raises(IntegrityError):
                    _new_account(session, account_id)
            session.rollback()
            assert heard.names() == ["after_begin", "after_rollback"]
            assert heard.calls[1][1] == (session,)
    finally:
        heard.remove()
    assert _stored(db) == 0


@pytest.mark.parametrize("listened", ["commit only", "rollback only"])
def test_commit_and_rollback_listeners_cost_no_orm_transaction(db: Database, listened: str) -> None:
    """Listeners that take only the session are told by the light session itself: no ORM
    transaction, no Connection (the cost the light session is there to save)."""
    name = "after_commit" if listened == "commit only" else "after_rollback"
    heard = Heard(db.writer, (name,))
    try:
        with db.writer() as session:
            _new_account(session)
            assert session.get_transaction() is None
            assert session._orm_bind is None  # type: ignore[attr-defined]
            session.commit() if name == "after_commit" else session.rollback()
            assert heard.calls == [(name, (session,))]
            _new_account(session)  # the next transaction is told of too
            session.commit() if name == "after_commit" else session.rollback()
            assert heard.calls == [(name, (session,))] * 2
    finally:
        heard.remove()


def test_no_listener_no_orm_transaction_nor_dispatch(db: Database) -> None:
    """Without listeners a light transaction costs a look at SQLAlchemy's listener lists:
    no ORM transaction, no Connection, not even the session's own dispatch."""
    assert not db.writer().dispatch.after_commit, "a listener is left from another test"
    with db.writer() as session:
        _new_account(session)
        _BY_HANDLE.all(session, handle="nobody")
        assert session.get_transaction() is None
        assert session._orm_bind is None  # type: ignore[attr-defined]
        session.commit()
        _new_account(session)
        session.rollback()
        assert "dispatch" not in session.__dict__


@pytest.mark.parametrize("then", ["orm read", "orm write", "savepoint"])
def test_events_are_told_once_when_orm_work_follows(db: Database, then: str) -> None:
    heard = Heard(db.writer, _TOLD + _OBJECTS)
    try:
        with db.writer() as session:
            _new_account(session)
            if then == "orm read":
                session.execute(select(_accounts.c.id)).all()
            elif then == "orm write":
                session.add(
                    Account(
                        id=str(uuid.uuid4()),
                        handle=f"orm{uuid.uuid4().hex[:9]}",
                        api_key_hash=uuid.uuid4().hex,
                        key_preview="ab_l...0000",
                        created_at=datetime.now(UTC),
                    )
                )
                session.flush()
            else:
                with session.begin_nested():
                    session.execute(select(_accounts.c.id)).all()
            session.commit()
        names = heard.names()
        begun = [args[1] for name, args in heard.calls if name == "after_begin"]
        assert len([t for t in begun if t.parent is None]) == 1
        outer_commits = names.count("after_commit") - (then == "savepoint")
        assert outer_commits == 1
        assert "after_rollback" not in names
        roots = [args[1] for name, args in heard.calls if name == "after_transaction_end"]
        assert len([t for t in roots if t.parent is None]) == 1
    finally:
        heard.remove()


def test_commit_listeners_alone_are_told_once_when_orm_work_follows(db: Database) -> None:
    heard = Heard(db.writer, ("after_commit", "after_rollback"))
    try:
        with db.writer() as session:
            _new_account(session)
            assert session.get_transaction() is None
            session.execute(select(_accounts.c.id)).all()  # the ORM's transaction begins
            session.commit()
            _new_account(session)
            session.execute(select(_accounts.c.id)).all()
            session.rollback()
        assert heard.names() == ["after_commit", "after_rollback"]
    finally:
        heard.remove()


def test_transaction_objects_are_created_and_ended_for_prepared_statements(
    db: Database,
) -> None:
    heard = Heard(db.writer, _OBJECTS)
    try:
        with db.writer() as session:
            _new_account(session)
            session.commit()
            _new_account(session)
            session.rollback()
        assert heard.names() == ["after_transaction_create", "after_transaction_end"] * 2
        assert all(args[0] is session for _, args in heard.calls)
    finally:
        heard.remove()


def test_readers_are_told_too(db: Database) -> None:
    heard = Heard(db.reader, _TOLD)
    try:
        with db.reader() as session:
            _BY_HANDLE.all(session, handle="nobody")
            session.commit()
        assert heard.names() == ["after_begin", "after_commit"]
    finally:
        heard.remove()


def test_queued_statements_are_committed_before_the_commit_is_told(db: Database) -> None:
    """On PostgreSQL queued statements go with the COMMIT (agent_broker.db.prepared): the
    listener hears of the commit once they are in the database."""
    seen: list[int] = []

    def count(session: Session) -> None:
        seen.append(_stored(db))

    event.listen(db.writer, "after_commit", count)
    try:
        with db.writer() as session:
            handle = f"q{uuid.uuid4().hex[:11]}"
            NEW_ACCOUNT.queue(
                session,
                id=str(uuid.uuid4()),
                handle=handle,
                key_hash=uuid.uuid4().hex,
                created_at=datetime.now(UTC),
            )
            session.commit()
    finally:
        event.remove(db.writer, "after_commit", count)
    assert seen == [1]


def test_listeners_added_and_removed_later_are_seen(db: Database) -> None:
    """The light session keeps SQLAlchemy's lists of listeners per class: a listener added
    after its sessions first looked is told, and one removed is not."""
    with db.writer() as session:
        _new_account(session)
        session.commit()  # the lists are read, and empty
    for target in (db.writer, LightSession, Session):
        heard = Heard(target, ("after_commit",))
        try:
            with db.writer() as session:
                _new_account(session)
                session.commit()
        finally:
            heard.remove()
        assert heard.names() == ["after_commit"], target
    with db.writer() as session:
        _new_account(session)
        session.commit()
    assert heard.names() == ["after_commit"]


def test_a_listener_on_one_session_is_told(db: Database) -> None:
    with db.writer() as session, db.writer() as other:
        heard = Heard(session, ("after_begin", "after_commit"))
        _new_account(other)
        other.commit()
        assert heard.calls == []
        _new_account(session)
        session.commit()
        assert heard.names() == ["after_begin", "after_commit"]
