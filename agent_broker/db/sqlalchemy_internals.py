"""Every use the service makes of SQLAlchemy below its public API, in one place.

The light session (agent_broker.db.light), prepared statements (agent_broker.db.prepared)
and group commit (agent_broker.db.group_commit) skip SQLAlchemy's per-call machinery for
speed (the rounds of "Where the time goes", docs/decisions/performance-*.md), and to do
so they read a few of its internals: the session's unflushed state, a Connection made
around a pooled connection, a nested pool checkout, a driver error wrapped as a
Connection wraps it, the compiler's bind processors, the types' cached result processors,
a statement's RETURNING columns, and the lists of listeners its event system keeps per
class. Each such reach is a function here, written for SQLAlchemy WRITTEN_FOR (the pin in
pyproject.toml); tests/test_framework_internals.py fails when the installed version
differs or a name used here has changed shape, and says what to check.

The compiler's documented attributes that prepared statements read (binds, positiontup,
escaped_bind_names, insert_prefetch, update_prefetch) stay where they are used; the test
checks them too."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

WRITTEN_FOR = "2.1.9"


def dbapi_error(dialect: Dialect, statement: str, error: Exception) -> sa_exc.DBAPIError:
    """A driver error as a Connection raises it (IntegrityError, OperationalError...: the
    class SQLAlchemy picks for it), its parameters hidden."""
    return sa_exc.DBAPIError.instance(
        statement,
        None,
        error,
        dialect.loaded_dbapi.Error,
        hide_parameters=True,
        dialect=dialect,
        ismulti=False,
    )


def has_unflushed_changes(session: Session) -> bool:
    """Whether the session holds ORM changes a flush would write (what autoflush reads),
    without the cost of Session.dirty, which walks every object."""
    return bool(session._new or session._deleted or session.identity_map._modified)


def connection_around(engine: Engine, pooled: PoolProxiedConnection) -> Connection:
    """A Connection of `engine` around a connection already checked out of its pool, so
    that the ORM's work runs on the light session's own connection and transaction.
    Closing the Connection checks the pooled connection back in."""
    return Connection(engine, connection=pooled)


def nested_checkout(pooled: PoolProxiedConnection) -> PoolProxiedConnection:
    """Another proxy of a checked-out pool connection (SQLAlchemy's nested checkout):
    closing it does not check the connection back in, nor reset it."""
    return pooled._checkout_existing()  # type: ignore[attr-defined,no-any-return]


def bind_processors(compiled: SQLCompiler) -> Mapping[str, Callable[[Any], Any]]:
    """The compiled statement's bind processors by bind name (only the binds whose type
    converts the value)."""
    return compiled._bind_processors


def result_processor(type_: TypeEngine[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """The type's processor of the driver's values for `dialect`, cached by the type as
    SQLAlchemy's own result objects use it; None when the value is taken as it comes."""
    return type_._cached_result_processor(dialect, None)


def returning_columns(statement: Any) -> Sequence[Any]:
    """The RETURNING columns of an INSERT, UPDATE or DELETE (empty for anything else)."""
    return getattr(statement, "_returning", ())


def numeric_dollar(dialect: Dialect) -> Dialect:
    """The dialect as it is, but writing binds as $1, $2... (each name one number), the
    placeholders libpq takes (agent_broker.db.libpq)."""
    numbered = copy.copy(dialect)
    numbered.paramstyle = "numeric_dollar"
    numbered.positional = True
    numbered.identifier_preparer = numbered.preparer(numbered)
    return numbered


def class_listener_lists(cls: type[Session], names: Sequence[str]) -> tuple[Collection[Any], ...]:
    """The lists SQLAlchemy keeps of the listeners of these session events for sessions of
    `cls`: those registered on the class, a base class or the sessionmaker that made it.
    SQLAlchemy changes them in place as listeners come and go, so they can be kept and
    read on every transaction for less than asking a session's dispatch."""
    lists = []
    for name in names:
        per_class = getattr(cls.dispatch, name)  # the event's class-level dispatch
        if cls not in per_class._clslevel:
            per_class.update_subclass(cls)  # as SQLAlchemy does for a class's first session
        lists.append(per_class._clslevel[cls])
    return tuple(lists)


def has_own_dispatch(session: Session) -> bool:
    """Whether the session has made its own dispatch: SQLAlchemy makes it on the first
    event dispatched on the session, and it holds any listener registered on the session
    itself, which the class's lists do not."""
    return "dispatch" in session.__dict__
