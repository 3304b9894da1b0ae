"""Database failures that pass: which errors mean the database is out of reach or did not
answer in time, so that a request answers 503 with a Retry-After instead of 500
(docs/interface.md §3, docs/decisions/outages.md), and which of them may be retried.

Two causes, as the metrics count them:
- `database_timeout`: a wait ran out (agent_broker.db.timeouts), or SQLite's busy timeout
  (its lock wait) did;
- `database_unreachable`: the connection was refused (the server is down, starting or
  shutting down, or out of connection slots) or lost (closed by a restart,
  pg_terminate_backend or the network).

Every other database error stays a server fault (500)."""

from __future__ import annotations

import sqlite3

from psycopg import OperationalError as DriverOperationalError
from psycopg import errors
from sqlalchemy import exc as sa_exc

from agent_broker.db.timeouts import timed_out

DATABASE_TIMEOUT = "database_timeout"
DATABASE_UNREACHABLE = "database_unreachable"
CAUSES = (DATABASE_TIMEOUT, DATABASE_UNREACHABLE)

# The statement SQLAlchemy's error names for a connection that could not be opened
# (agent_broker.db.light): refused, not lost.
CONNECT = "connect"

# Server errors that end the session: the server is going down or refuses new sessions.
_SERVER_GONE = (
    errors.AdminShutdown,  # 57P01: fast shutdown or pg_terminate_backend
    errors.CrashShutdown,  # 57P02
    errors.CannotConnectNow,  # 57P03: starting up or shutting down
    errors.TooManyConnections,  # 53300: no connection slot left
)


def _driver_error(error: BaseException) -> BaseException:
    return getattr(error, "orig", None) or error


def _lost_or_refused(error: BaseException) -> bool:
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return True
    orig = _driver_error(error)
    if isinstance(orig, _SERVER_GONE):
        return True
    if isinstance(orig, DriverOperationalError):
        # psycopg's own: no SQLSTATE means the client side failed (connection failed,
        # server closed the connection, consuming input failed, the connection is
        # closed); class 08 is the server's "connection exception".
        sqlstate = getattr(orig, "sqlstate", None)
        return sqlstate is None or sqlstate.startswith("08")
    return False


def _sqlite_busy(error: BaseException) -> bool:
    orig = _driver_error(error)
    return isinstance(orig, sqlite3.OperationalError) and "database is locked" in str(orig)


def _cause_of_one(error: BaseException) -> str | None:
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection came free in time
        return DATABASE_TIMEOUT
    if not isinstance(error, (sa_exc.DBAPIError, DriverOperationalError, sqlite3.Error)):
        return None
    if timed_out(error) or _sqlite_busy(error):
        return DATABASE_TIMEOUT
    if _lost_or_refused(error):
        return DATABASE_UNREACHABLE
    return None


def cause(error: BaseException) -> str | None:
    """DATABASE_TIMEOUT, DATABASE_UNREACHABLE, or None for any other error; the error's
    causes are looked at too (a middleware or a library may have wrapped it)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _cause_of_one(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def lost(error: BaseException) -> bool:
    """Whether `error` is a connection that was open and is gone (the server closed it):
    a read that met it may run again on a fresh connection. A refused connection is not:
    the server is not there, and trying again at once would only be refused again."""
    if cause(error) != DATABASE_UNREACHABLE:
        return False
    if isinstance(error, sa_exc.DBAPIError) and error.statement in (CONNECT, None):
        return False  # no statement ran: the connection never opened
    return not isinstance(_driver_error(error), errors.CannotConnectNow)
