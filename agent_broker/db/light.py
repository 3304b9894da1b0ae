"""Sessions that reach the database through a pooled DBAPI connection and build the ORM's
transaction machinery only if something asks for it.

Most of a request's statements are prepared ones (agent_broker.db.prepared), which need
nothing but the DBAPI connection; the ORM Session's connection, transaction and commit
bookkeeping cost about 70 µs a request on top of the 10 µs the pool and the driver take
(make bench). A `LightSession` checks a connection out of the engine's pool on its first
statement and begins the transaction on it itself (BEGIN IMMEDIATE for SQLite's writers,
BEGIN DEFERRED for its readers; psycopg begins by itself). When ORM work follows
(session.execute, session.get, a flush, a savepoint), the session binds to a Connection
wrapped around that same DBAPI connection, so every statement of the session runs in the
one transaction. Code that needs the engine reads `session.bind`, not get_bind().

A transaction that ran only prepared statements tells the session's listeners what the
ORM's would (docs/decisions/speed-layer.md): `after_commit` and
`after_rollback` (whose listeners take only the session) are dispatched by the light
session itself, once its DBAPI connection has committed or rolled back; a listener of an
event that hands over the ORM's transaction or connection (`after_begin`, `before_commit`,
`after_transaction_create`, `after_transaction_end`, `after_soft_rollback`) makes the
session begin the ORM's transaction on its connection as the transaction begins, and
SQLAlchemy tells them all. Whenever the ORM's transaction is there, the session leaves
every event to it, so none is told twice. The listeners are looked for as a transaction
begins (one registered later hears from the next transaction on), in the lists SQLAlchemy
keeps per session class: without listeners that look is all it costs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session
from sqlalchemy.pool import PoolProxiedConnection

from agent_broker.db import libpq
from agent_broker.db import sqlalchemy_internals as internals
from agent_broker.db.group_commit import GroupCommit
from agent_broker.db.outages import CONNECT


def as_sqlalchemy_error(dialect: Any, statement: str, error: Exception) -> sa_exc.DBAPIError:
    """A driver error as SQLAlchemy raises it through a Connection (IntegrityError,
    OperationalError...), its parameters hidden."""
    return internals.dbapi_error(dialect, statement, error)


# Session events whose listeners take the ORM's transaction or connection, or run where
# the ORM runs them (a before_commit listener may add objects for the commit to flush).
_ORM_EVENTS = (
    "after_begin",
    "after_transaction_create",
    "after_transaction_end",
    "after_soft_rollback",
    "before_commit",
)
# Session events a light session tells of itself, for a transaction the ORM was not in.
_TOLD_EVENTS = ("after_commit", "after_rollback")
# What the listeners there are when a transaction begins ask of it (LightSession._asked).
_ORM, _TELL = "orm", "tell"


class LightSession(Session):
    # Per session class (each sessionmaker makes its own): the lists SQLAlchemy keeps of
    # the listeners of _ORM_EVENTS and of _TOLD_EVENTS, found once (sqlalchemy_internals).
    _listener_lists: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._listener_lists = None

    def __init__(self, *, bind: Engine, begin_sql: str | None, **options: Any) -> None:
        super().__init__(bind=bind, **options)
        self.dialect = bind.dialect
        # SQLite's connections run with the driver in autocommit: the session says BEGIN.
        self._begin_sql = begin_sql
        self._pooled: PoolProxiedConnection | None = None
        self._begun = False
        # What the listeners of the session's events ask of the open transaction (_ORM,
        # _TELL or None), read as it began.
        self._asked: str | None = None
        self._orm_bind: Connection | None = None
        # A SQLite request writer's group commit (agent_broker.db.group_commit): its
        # connection and transaction are the group's, its own work a savepoint in it.
        self.group: GroupCommit | None = None
        # PostgreSQL: prepared statements go through libpq (agent_broker.db.libpq), and those
        # queued for the session's next round trip (Prepared.queue, .later) wait here.
        self.on_libpq = bind.dialect.name == "postgresql"
        self.queued: list[libpq.Statement] = []

    def dbapi_connection(self) -> Any:
        """The DBAPI connection of this session's transaction, begun if need be."""
        if self._begun:
            return self._pooled.dbapi_connection  # type: ignore[union-attr]
        dbapi_connection = self._begin()
        if self._asked is _ORM:
            # Listeners take the ORM's transaction and connection: begin them now, and
            # SQLAlchemy tells every listener from here on (the module's docstring).
            self.connection()
        return dbapi_connection

    def _begin(self) -> Any:
        """Check out the connection and begin the transaction on it, if not yet done; no
        listener is told (the ORM's transaction does that when ORM work begins it)."""
        try:
            if self._pooled is None:
                group = self.group
                self._pooled = self.bind.pool.connect() if group is None else group.checkout()
            dbapi_connection = self._pooled.dbapi_connection
            if not self._begun:
                if self.group is not None:
                    self.group.begin_member(dbapi_connection)
                # The ORM's own begin (the engine's "begin" event) may have come first.
                elif self._begin_sql is not None and not dbapi_connection.in_transaction:
                    dbapi_connection.execute(self._begin_sql)
                self._begun = True
                self._asked = self._listeners_ask()
        except self.dialect.loaded_dbapi.Error as error:
            statement = self._begin_sql if self._pooled is not None else CONNECT
            raise as_sqlalchemy_error(self.dialect, statement or CONNECT, error) from error
        return dbapi_connection

    def send_queued(self) -> None:
        """Run the queued statements now (ORM work or a commit of the ORM's follows)."""
        if self.queued:
            self._through_libpq(libpq.send)

    def _through_libpq(self, send: Any) -> None:
        """`send(connection, self.queued)`, its driver error raised as SQLAlchemy's."""
        try:
            send(self.dbapi_connection(), self.queued)
        except self.dialect.loaded_dbapi.Error as error:
            raise as_sqlalchemy_error(self.dialect, "queued statements", error) from error

    def get_bind(self, *args: Any, **kwargs: Any) -> Any:
        # Every ORM path (execute, flush, savepoints) asks here for its connection.
        if self.queued:
            self.send_queued()
        if self._orm_bind is None:
            self._begin()
            assert self._pooled is not None
            self._orm_bind = internals.connection_around(self.bind, self._pooled)
        return self._orm_bind

    def _has_orm_work(self) -> bool:
        return self.in_transaction() or internals.has_unflushed_changes(self)

    def _listeners_ask(self) -> str | None:
        """What the listeners of the session's events ask of a transaction beginning now:
        the ORM's transaction (_ORM), to be told of its commit or rollback by the session
        (_TELL), or nothing. Read from the lists SQLAlchemy keeps, a fraction of the cost
        of asking the session's dispatch: this runs for every transaction."""
        if internals.has_own_dispatch(self):  # listeners of this session alone, maybe
            dispatch = self.dispatch
            orm = any(getattr(dispatch, name) for name in _ORM_EVENTS)
            told = any(getattr(dispatch, name) for name in _TOLD_EVENTS)
        else:
            lists = self._listener_lists
            if lists is None:
                cls = type(self)
                lists = cls._listener_lists = (
                    internals.class_listener_lists(cls, _ORM_EVENTS),
                    internals.class_listener_lists(cls, _TOLD_EVENTS),
                )
            orm, told = any(lists[0]), any(lists[1])
        return _ORM if orm else _TELL if told else None

    def _drop_if_lost(self) -> None:
        """A connection closed in the middle of its transaction (agent_broker.db.libpq
        gives up on a server that does not answer in time) is invalidated: the pool drops
        it, and nothing tries to roll it back."""
        pooled = self._pooled
        if pooled is None or pooled.dbapi_connection is None:
            return
        if pooled.dbapi_connection.closed:
            (self._orm_bind or pooled).invalidate()
            self._begun = False

    def _end_pooled(self, succeeded: bool) -> None:
        if not succeeded:
            self.queued.clear()
        if self._pooled is not None and self._begun:
            dbapi_connection = self._pooled.dbapi_connection
            if not succeeded:
                dbapi_connection.rollback()
            elif self.on_libpq:
                self._through_libpq(libpq.commit)  # the queued statements and the COMMIT
            else:
                dbapi_connection.commit()
        self._begun = False

    def commit(self) -> None:
        if self._has_orm_work():
            if self._orm_bind is not None:
                # The ORM commits that connection itself: what is queued must go first.
                # (Without one, its transaction only tells the listeners, and the queued
                # statements go with the COMMIT below.)
                self.send_queued()
            super().commit()  # flushes, commits the connection, tells the listeners
            self._end_pooled(True)
            return
        told = self._begun and self._asked is _TELL
        self._end_pooled(True)
        if told:
            # Committed with no ORM transaction to tell the listeners: tell them here.
            self.dispatch.after_commit(self)

    def rollback(self) -> None:
        told = self._begun and self._asked is _TELL and not self.in_transaction()
        if self._begun and self.on_libpq:
            self._drop_if_lost()
        if self.in_transaction():
            super().rollback()  # tells the listeners
        self._end_pooled(False)
        if told:
            # Lost with its connection or rolled back: either way it is over, as the ORM
            # tells of a transaction whose connection was invalidated.
            self.dispatch.after_rollback(self)

    def close(self) -> None:
        try:
            if self._begun and self.on_libpq:
                self._drop_if_lost()
            if self._has_orm_work() or self._orm_bind is not None or self.identity_map:
                super().close()
            self._end_pooled(False)
        finally:
            # The Connection owns the pooled connection once made: closing it checks the
            # connection back in, as closing the pooled connection itself does otherwise.
            owner = self._orm_bind or self._pooled
            self._orm_bind = self._pooled = None
            self.queued.clear()
            if owner is not None:
                owner.close()
