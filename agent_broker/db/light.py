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
one transaction. Code that needs the engine reads `session.bind`, not get_bind()."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session
from sqlalchemy.pool import PoolProxiedConnection

from agent_broker.db.group_commit import GroupCommit


class LightSession(Session):
    def __init__(self, *, bind: Engine, begin_sql: str | None, **options: Any) -> None:
        super().__init__(bind=bind, **options)
        self.dialect = bind.dialect
        # SQLite's connections run with the driver in autocommit: the session says BEGIN.
        self._begin_sql = begin_sql
        self._pooled: PoolProxiedConnection | None = None
        self._begun = False
        self._orm_bind: Connection | None = None
        # A SQLite request writer's group commit (agent_broker.db.group_commit): its
        # connection and transaction are the group's, its own work a savepoint in it.
        self.group: GroupCommit | None = None
        # PostgreSQL: one cursor for the session's prepared statements (statement_cursor).
        self.keeps_cursor = bind.dialect.name == "postgresql"
        self._kept_cursor: Any = None

    def dbapi_connection(self) -> Any:
        """The DBAPI connection of this session's transaction, begun if need be."""
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
        except self.dialect.loaded_dbapi.Error as error:
            # Raised as SQLAlchemy raises it through a Connection (OperationalError...).
            raise sa_exc.DBAPIError.instance(
                self._begin_sql or "connect",
                None,
                error,
                self.dialect.loaded_dbapi.Error,
                hide_parameters=True,
                dialect=self.dialect,
            ) from error
        return dbapi_connection

    def statement_cursor(self) -> Any:
        """A cursor on the session's transaction for one prepared statement. On PostgreSQL
        the session keeps one cursor and hands it out again: psycopg reads each result
        into memory, so nothing stays pending between statements, and a new psycopg cursor
        (its adapters, its close) costs about 35 µs, over a third of a statement's CPU
        (docs/decisions.md, seventh round). SQLite gets a new cursor each time, which the
        caller closes, so no statement of SQLite's stays open across a savepoint, a commit
        or a rollback."""
        dbapi_connection = self.dbapi_connection()  # begins the transaction if need be
        if self._kept_cursor is not None:
            return self._kept_cursor
        cursor = dbapi_connection.cursor()
        if self.keeps_cursor:
            self._kept_cursor = cursor
        return cursor

    def get_bind(self, *args: Any, **kwargs: Any) -> Any:
        # Every ORM path (execute, flush, savepoints) asks here for its connection.
        if self._orm_bind is None:
            self.dbapi_connection()
            assert self._pooled is not None
            self._orm_bind = Connection(self.bind, connection=self._pooled)
        return self._orm_bind

    def _has_orm_work(self) -> bool:
        return self.in_transaction() or bool(
            self._new or self._deleted or self.identity_map._modified
        )

    def _end_pooled(self, succeeded: bool) -> None:
        if self._pooled is not None and self._begun:
            dbapi_connection = self._pooled.dbapi_connection
            if succeeded:
                dbapi_connection.commit()
            else:
                dbapi_connection.rollback()
        self._begun = False

    def commit(self) -> None:
        if self._has_orm_work():
            super().commit()  # flushes, commits the connection, tells after_commit listeners
        self._end_pooled(True)

    def rollback(self) -> None:
        if self.in_transaction():
            super().rollback()
        self._end_pooled(False)

    def close(self) -> None:
        try:
            if self._has_orm_work() or self._orm_bind is not None or self.identity_map:
                super().close()
            self._end_pooled(False)
        finally:
            # The Connection owns the pooled connection once made: closing it checks the
            # connection back in, as closing the pooled connection itself does otherwise.
            owner = self._orm_bind or self._pooled
            self._orm_bind = self._pooled = None
            kept, self._kept_cursor = self._kept_cursor, None
            if kept is not None:
                kept.close()
            if owner is not None:
                owner.close()
