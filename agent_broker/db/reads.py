"""Read sessions that reach the database through a pooled DBAPI connection and build the
ORM's transaction machinery only if something asks for it.

A read request's statements are mostly prepared ones (agent_broker.db.prepared), which
need nothing but the DBAPI connection; the ORM Session's connection, transaction and
commit bookkeeping cost about 70 µs a request on top of the 10 µs the pool and the driver
take (make bench). A `LightSession` checks a connection out of the engine's pool on its
first statement and begins a read transaction on it itself. When ORM work follows
(session.execute, session.get...), the session binds to a Connection wrapped around that
same DBAPI connection, so every statement of the request still reads one snapshot."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import PoolProxiedConnection


class LightSession(Session):
    def __init__(self, *, bind: Engine, begin_sql: str | None, **options: Any) -> None:
        super().__init__(bind=bind, **options)
        self._reads_engine = bind
        # SQLite's connections run with the driver in autocommit: the session says BEGIN.
        # psycopg opens a transaction by itself on the first statement.
        self._begin_sql = begin_sql
        self._pooled: PoolProxiedConnection | None = None
        self._begun = False
        self._orm_bind: Connection | None = None
        self.dialect = bind.dialect

    def dbapi_connection(self) -> Any:
        """The DBAPI connection of this session's read transaction, begun if need be."""
        if self._pooled is None:
            self._pooled = self._reads_engine.pool.connect()
        dbapi_connection = self._pooled.dbapi_connection
        if not self._begun:
            if self._begin_sql is not None:
                dbapi_connection.execute(self._begin_sql)
            self._begun = True
        return dbapi_connection

    def get_bind(self, *args: Any, **kwargs: Any) -> Any:
        if self._orm_bind is None:
            self.dbapi_connection()
            assert self._pooled is not None
            self._orm_bind = Connection(self._reads_engine, connection=self._pooled)
        return self._orm_bind

    def _end_pooled(self, succeeded: bool) -> None:
        if self._pooled is not None and self._begun:
            dbapi_connection = self._pooled.dbapi_connection
            if succeeded:
                dbapi_connection.commit()
            else:
                dbapi_connection.rollback()
        self._begun = False

    def commit(self) -> None:
        if self._orm_bind is not None:
            super().commit()
        self._end_pooled(True)

    def rollback(self) -> None:
        if self._orm_bind is not None:
            super().rollback()
        self._end_pooled(False)

    def close(self) -> None:
        try:
            if self._orm_bind is not None:
                super().close()
            self._end_pooled(False)
        finally:
            # The Connection owns the pooled connection once made: closing it checks the
            # connection back in, as closing the pooled connection itself does otherwise.
            owner = self._orm_bind or self._pooled
            self._orm_bind = self._pooled = None
            if owner is not None:
                owner.close()
