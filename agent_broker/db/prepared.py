"""Prepared statements for the hot paths.

A statement is written once with SQLAlchemy Core (portable SQL, the models' column
types), compiled once per dialect, and then run straight on the DBAPI cursor of the
request session's own connection, in the session's transaction. SQLAlchemy's per-call
execution machinery (cache-key lookup, execution context, result object) costs about
30 µs a statement against about 6 µs for the driver itself; on a request of a dozen
statements that difference is most of the request. Everything SQLAlchemy does that
matters here is kept: the compiled SQL and bind names, the types' bind and result
processors (UTCDateTime), column defaults, and driver errors re-raised as SQLAlchemy's
exception classes (IntegrityError...) with their parameters hidden.

Pending ORM changes are flushed first, so a prepared statement sees what the session has
added, as an autoflushing query would.

On PostgreSQL the statements go through libpq (agent_broker.db.libpq) and, in a light
session, need not each wait for their own round trip: `queue` sends a statement whose
outcome nobody reads with the session's next one, `later` a read whose rows are read from
that round trip, and `queue_row` an insert whose row is made from the values given."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Table, bindparam, insert
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from agent_broker.db import libpq
from agent_broker.db import sqlalchemy_internals as internals
from agent_broker.db.light import LightSession, as_sqlalchemy_error

Processor = Callable[[Any], Any] | None
# One bind: (name in the SQL, caller's key or None for a fixed value, processor, fixed value)
_Bind = tuple[str, str | None, Processor, Any]


class _Compiled:
    __slots__ = (
        "sql",
        "libpq_sql",
        "positional",
        "binds",
        "keys",
        "row",
        "processing",
        "dbapi_error",
        "dialect",
    )

    def __init__(self, statement: ClauseElement, dialect: Dialect) -> None:
        on_libpq = dialect.name == "postgresql"
        # libpq takes the server's own $1 placeholders (agent_broker.db.libpq).
        compiled = statement.compile(
            dialect=internals.numeric_dollar(dialect) if on_libpq else dialect
        )
        assert isinstance(compiled, SQLCompiler)
        self.sql = compiled.string
        self.libpq_sql = self.sql.encode() if on_libpq else None
        self.positional = bool(compiled.positional)
        self.dialect = dialect
        self.dbapi_error = dialect.loaded_dbapi.Error
        names = compiled.positiontup if compiled.positional else list(compiled.binds)
        # Columns an INSERT or UPDATE fills from their Python-side default or onupdate.
        defaults = {
            **{c.key: c.default for c in compiled.insert_prefetch},
            **{c.key: c.onupdate for c in compiled.update_prefetch},
        }
        self.binds = [self._bind(compiled, name, defaults) for name in names or ()]
        self.keys = frozenset(key for _name, key, _p, _f in self.binds if key is not None)
        columns = list(getattr(statement, "selected_columns", ()) or ())
        if not columns and internals.returning_columns(statement):
            columns = list(statement.exported_columns)  # type: ignore[attr-defined]
        self.row = namedtuple("Row", [c.key for c in columns], rename=True) if columns else None
        processors = [internals.result_processor(c.type, dialect) for c in columns]
        # Only the columns whose type converts what the driver returns (timestamps...).
        self.processing = [(i, p) for i, p in enumerate(processors) if p is not None]

    @staticmethod
    def _bind(compiled: SQLCompiler, name: str, defaults: dict[str, Any]) -> _Bind:
        bind = compiled.binds[name]
        if bind.expanding:
            raise ValueError(f"prepared statements take no expanding IN parameter ({name})")
        processor = internals.bind_processors(compiled).get(name)
        sql_name = compiled.escaped_bind_names.get(name, name)
        if name in defaults:
            default = defaults[name]
            if default is None or not default.is_scalar:
                raise ValueError(f"prepared statements need a value for {name} (no fixed default)")
            value = default.arg
        elif bind.required or bind.callable is not None:
            return (sql_name, bind.key, processor, None)
        else:
            value = bind.effective_value
        return (sql_name, None, None, processor(value) if processor else value)

    def arguments(self, params: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        if not params.keys() <= self.keys:
            # A value the statement has no place for is a mistake (a misspelt key, or a
            # column missing from the statement), never something to drop silently.
            unknown = ", ".join(sorted(params.keys() - self.keys))
            raise TypeError(f"the statement takes no parameter {unknown}")
        values = []
        for _sql_name, key, processor, fixed in self.binds:
            if key is None:
                values.append(fixed)
            else:
                value = params[key]
                values.append(processor(value) if processor is not None else value)
        if self.positional:
            return values
        return {b[0]: v for b, v in zip(self.binds, values, strict=True)}

    def to_row(self, raw: Sequence[Any]) -> Any:
        assert self.row is not None
        if not self.processing:
            return self.row._make(raw)
        values = list(raw)
        for index, process in self.processing:
            values[index] = process(values[index])
        return self.row._make(values)


_CONNECTION = "agent_broker.prepared.connection"


def _flush_pending(session: Session) -> None:
    """Write the session's pending ORM changes, as an autoflushing query would first."""
    if internals.has_unflushed_changes(session):
        session.flush()


def _connection_of(session: Session, prepared: Prepared) -> tuple[_Compiled, Any]:
    """The compiled statement and the DBAPI connection of the session's transaction (not a
    light session), remembered per transaction: asking the session for its connection on
    every statement costs more than the statement."""
    transaction = session.get_transaction()
    cached = session.info.get(_CONNECTION)
    if cached is None or transaction is None or cached[0] is not transaction:
        connection = session.connection()  # begins the transaction if need be
        cached = session.info[_CONNECTION] = (
            session.get_transaction(),
            connection.dialect,
            connection.connection.dbapi_connection,
        )
    return prepared._compiled(cached[1]), cached[2]


class Prepared:
    """One Core statement, compiled per dialect on first use. Parameters are the statement's
    bindparam() keys; rows come back as named tuples with the types' result processing.

    `statement` may instead be a function of the dialect's name, for constructs that each
    database spells its own way (INSERT ... ON CONFLICT)."""

    __slots__ = ("statement", "_by_dialect")

    def __init__(self, statement: ClauseElement | Callable[[str], ClauseElement]) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}

    def _compiled(self, dialect: Dialect) -> _Compiled:
        compiled = self._by_dialect.get(dialect.name)
        if compiled is None:
            statement = self.statement
            if not isinstance(statement, ClauseElement):
                statement = statement(dialect.name)
            compiled = self._by_dialect[dialect.name] = _Compiled(statement, dialect)
        return compiled

    def _run(self, session: Session, params: Mapping[str, Any]) -> tuple[int, list, _Compiled]:
        """Run the statement: the rows it changed, its rows as the driver gives them, and
        the statement."""
        _flush_pending(session)
        queued: list[libpq.Statement] = []
        if isinstance(session, LightSession):
            compiled = self._compiled(session.dialect)
            dbapi_connection = session.dbapi_connection()  # begins the transaction if need be
            queued = session.queued
        else:
            compiled, dbapi_connection = _connection_of(session, self)
        try:
            if compiled.libpq_sql is not None:
                rowcount, raws = libpq.run(
                    dbapi_connection, queued, compiled.libpq_sql, compiled.arguments(params)
                )
                return rowcount, raws, compiled
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(compiled.sql, compiled.arguments(params))
                return cursor.rowcount, cursor.fetchall() if cursor.description else [], compiled
            finally:
                cursor.close()
        except compiled.dbapi_error as error:
            if isinstance(error, libpq.WaitExpired) and not isinstance(session, LightSession):
                # libpq closed the connection under the transaction: the session's
                # Connection lets go of it rather than roll it back (as a light session
                # does by itself).
                session.connection().invalidate()
            raise as_sqlalchemy_error(compiled.dialect, compiled.sql, error) from error

    def queue(self, session: Session, **params: Any) -> None:
        """Run it without waiting for its outcome, where that saves a round trip: in a light
        session on PostgreSQL it goes with the session's next statement, ORM work or
        commit, and an error it meets is raised there (so only for statements whose
        outcome the caller would not read, in a transaction that fails as a whole if
        they do). Elsewhere it runs now."""
        if not saves_round_trips(session):
            self._run(session, params)
            return
        self._enqueue(session, params, None)

    def later(self, session: Session, **params: Any) -> Later:
        """Run it where that saves a round trip: in a light session on PostgreSQL it goes
        with the session's next statement, ORM work or commit, as queue() does, and its rows
        are read from that round trip (Later.all()); elsewhere it runs now. For reads that
        do not decide what is sent next, so two of them cost one round trip."""
        if not saves_round_trips(session):
            _, raws, compiled = self._run(session, params)
            return Later(session, compiled, [raws])
        arrived: list[list[tuple]] = []
        return Later(session, self._enqueue(session, params, arrived), arrived)

    def _enqueue(
        self, session: Any, params: Mapping[str, Any], arrived: list[list[tuple]] | None
    ) -> _Compiled:
        """Add the statement to a light session's queue (PostgreSQL), after any pending ORM
        changes, as a statement run now would see them."""
        _flush_pending(session)
        compiled = self._compiled(session.dialect)
        session.dbapi_connection()  # begins the transaction if need be
        assert compiled.libpq_sql is not None
        session.queued.append((compiled.libpq_sql, compiled.arguments(params), arrived))
        return compiled

    def queue_row(self, session: Session, **params: Any) -> Any:
        """For an INSERT that returns the row it writes (inserting(table, returning=True)),
        given a value for every column: queue it (see queue) and make the row from those
        values, where a round trip is saved so; elsewhere run it and read the row back."""
        light = isinstance(session, LightSession)
        compiled = self._compiled(session.dialect if light else session.get_bind().dialect)
        assert compiled.row is not None, "queue_row needs an INSERT ... RETURNING"
        fields = compiled.row._fields
        if missing := set(fields) - params.keys():
            raise TypeError(f"queue_row needs every column: {', '.join(sorted(missing))}")
        if not saves_round_trips(session):
            return self.one(session, **params)
        self._enqueue(session, params, None)
        return compiled.row._make([params[field] for field in fields])

    def execute(self, session: Session, **params: Any) -> int:
        """Run it; the number of rows it changed."""
        return int(self._run(session, params)[0])

    def one_or_none(self, session: Session, **params: Any) -> Any:
        _, raws, compiled = self._run(session, params)
        return compiled.to_row(raws[0]) if raws else None

    def one(self, session: Session, **params: Any) -> Any:
        row = self.one_or_none(session, **params)
        if row is None:
            raise sa_exc.NoResultFound("the prepared statement returned no row")
        return row

    def all(self, session: Session, **params: Any) -> list[Any]:
        _, raws, compiled = self._run(session, params)
        return [compiled.to_row(raw) for raw in raws]

    def scalar(self, session: Session, **params: Any) -> Any:
        """The first column of the first row, or None without a row."""
        row = self.one_or_none(session, **params)
        return None if row is None else row[0]


class Later:
    """The rows of a statement sent with its session's next round trip (Prepared.later)."""

    __slots__ = ("_session", "_compiled", "_arrived")

    def __init__(self, session: Session, compiled: _Compiled, arrived: list[list[tuple]]):
        self._session = session
        self._compiled = compiled
        self._arrived = arrived

    def all(self) -> list[Any]:
        """Its rows, as Prepared.all gives them (sending what is queued first, if the
        session has not sent it yet)."""
        if not self._arrived:
            assert isinstance(self._session, LightSession)
            self._session.send_queued()
        if not self._arrived:
            raise RuntimeError("the statement was dropped with its transaction")
        return [self._compiled.to_row(raw) for raw in self._arrived[0]]

    def one_or_none(self) -> Any:
        rows = self.all()
        return rows[0] if rows else None


def saves_round_trips(session: Session) -> bool:
    """Whether Prepared.queue defers statements in this session (a light session on
    PostgreSQL), for callers that write differently when it does."""
    return isinstance(session, LightSession) and session.on_libpq


def _every_column(table: Table) -> dict[str, Any]:
    return {
        column.key: bindparam(column.key)
        for column in table.c
        if column is not table.autoincrement_column
    }


def inserting(table: Table, *, returning: bool = False) -> Prepared:
    """INSERT of one row of `table`, every column bound by its key (an autoincrement key
    left to the database); with `returning`, the row as written comes back."""
    statement = insert(table).values(_every_column(table))
    return Prepared(statement.returning(*table.c) if returning else statement)


def inserting_unless_taken(table: Table, *, returning: Any = None) -> Prepared:
    """INSERT ... ON CONFLICT DO NOTHING of one row, every column bound by its key: a row
    that a unique constraint already holds (or a concurrent insert is about to commit)
    makes it insert nothing, without an error or a savepoint. With `returning` (a column),
    one() / one_or_none() tell whether the row went in."""

    def build(dialect_name: str) -> Any:
        statement = dialect_insert(dialect_name, table).values(_every_column(table))
        statement = statement.on_conflict_do_nothing()
        return statement.returning(returning) if returning is not None else statement

    return Prepared(build)


def dialect_insert(dialect_name: str, table: Table) -> Any:
    """The dialect's own INSERT for `table`, which has ON CONFLICT (for a Prepared built
    per dialect)."""
    return (postgresql if dialect_name == "postgresql" else sqlite).insert(table)
