"""How long PostgreSQL work may wait: the server's own limits, set on each connection as it
opens (no round trip: they travel in the connection's startup packet), and how a wait
that ran out is recognised, so that a request answers 503 rather than 500.

BROKER_DB_STATEMENT_TIMEOUT_MS bounds each statement and BROKER_DB_LOCK_TIMEOUT_MS each
wait for a row or table lock; jobs and the CLI run under BROKER_DB_JOB_STATEMENT_TIMEOUT_MS
instead (the ledger sealer's reads span the whole journal), and migrations under the
server's own defaults. The libpq path also bounds its own wait for the server
(agent_broker.db.libpq). SQLite has no equivalent: its lock waits are bounded by
BROKER_SQLITE_BUSY_TIMEOUT_MS, and its statements run in process."""

from __future__ import annotations

from typing import Literal

from psycopg import errors

from agent_broker.config import Settings
from agent_broker.db.libpq import WaitExpired

# Whose work a database's connections carry.
Work = Literal["requests", "jobs", "migrations"]

# statement_timeout ran out (or someone cancelled the statement), lock_timeout ran out,
# or the server did not answer the libpq path in time.
_TIMED_OUT = (errors.QueryCanceled, errors.LockNotAvailable, WaitExpired)


def limits_ms(settings: Settings, work: Work) -> tuple[int, int] | None:
    """(statement timeout, lock timeout) in milliseconds for `work`, 0 meaning none; None
    for migrations, which keep whatever the server's defaults are."""
    if work == "migrations":
        return None
    statement = (
        settings.db_job_statement_timeout_ms if work == "jobs" else settings.db_statement_timeout_ms
    )
    return statement, settings.db_lock_timeout_ms


def startup_options(given: str | None, statement_ms: int, lock_ms: int) -> str:
    """The `options` connection parameter: the server settings given already (in the URL
    or PGOPTIONS, which a given parameter would otherwise replace) and then the limits, so
    the limits win over any earlier value of theirs."""
    limits = f"-c statement_timeout={int(statement_ms)} -c lock_timeout={int(lock_ms)}"
    return f"{given.strip()} {limits}" if given and given.strip() else limits


def timed_out(error: BaseException) -> bool:
    """Whether a database error, SQLAlchemy's or the driver's own, is a wait that ran out."""
    return isinstance(getattr(error, "orig", None) or error, _TIMED_OUT)
