"""Engine construction. SQLite runs in WAL mode with foreign keys and a busy timeout, and
write transactions start with BEGIN IMMEDIATE so concurrent writers queue on the
database lock instead of failing on a lock upgrade. PostgreSQL goes through psycopg 3;
where its work runs is BROKER_DB_DISPATCH (agent_broker.db.dispatch), and how long it may
wait is set on each connection as it opens (agent_broker.db.timeouts)."""

from __future__ import annotations

import asyncio
import os
import select
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio import CapacityLimiter
from sqlalchemy import Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from agent_broker.config import Settings
from agent_broker.db import libpq
from agent_broker.db.checkpoint import BACKSTOP_PAGES, WalCheckpointer
from agent_broker.db.dispatch import THREADS, PerLoop
from agent_broker.db.group_commit import BatchingConnection, GroupCommit, WriteGate
from agent_broker.db.light import LightSession
from agent_broker.db.timeouts import Work, limits_ms, startup_options

BEGIN_MODE = "agent_broker_begin"
MAX_OVERFLOW = 20  # connections opened beyond the pool's size under a burst, then closed
_BEGIN = {"IMMEDIATE": "BEGIN IMMEDIATE", "DEFERRED": "BEGIN DEFERRED"}


@dataclass
class Database:
    engine: Engine
    # Sessions that will write: on SQLite they take the write lock at BEGIN.
    writer: sessionmaker[Session]
    # Sessions that only read: a deferred BEGIN, never blocking writers. Both kinds are
    # light sessions (agent_broker.db.light).
    reader: sessionmaker[Session]

    # Wherever database work runs inline (always on SQLite, by default on PostgreSQL):
    # write requests of this process take turns here before their transaction begins, so a
    # writer waiting for a lock (SQLite's file lock, a PostgreSQL row lock) never blocks
    # the event loop that the lock's holder needs to finish (see agent_broker.db.dispatch).
    serialise_writes: bool = False
    # SQLite on a file: checkpoints the log while the service runs (started by its lifespan).
    checkpointer: WalCheckpointer | None = None
    # Elsewhere (PostgreSQL): how many request sessions may be open at once in this process:
    # the pool's size (its overflow is left to jobs and the CLI's work). A request waits here,
    # on the event loop, before its session opens, so its database work never waits for a
    # connection that only a request of the same loop can give back (inline), or while
    # holding a thread that a connection's holder needs next (threads: one more thread
    # than slots; agent_broker.db.dispatch).
    session_slots: int | None = None
    # SQLite on a file: the requests in line at the write gate share a commit
    # (agent_broker.db.group_commit).
    group_commit: bool = False
    _gate: PerLoop[WriteGate] = field(init=False)
    _slots: PerLoop[asyncio.Semaphore] | None = None

    def __post_init__(self) -> None:
        if self.group_commit:
            pool, begin = self.engine.pool, _BEGIN["IMMEDIATE"]
            self._gate = PerLoop(lambda: WriteGate(GroupCommit(pool, begin)))
        else:
            self._gate = PerLoop(WriteGate)
        if self.session_slots is not None:
            slots = self.session_slots
            self._slots = PerLoop(lambda: asyncio.Semaphore(slots))

    def write_gate(self) -> AbstractAsyncContextManager[object]:
        return self._gate.get() if self.serialise_writes else nullcontext()

    def session_slot(self) -> AbstractAsyncContextManager[object]:
        return self._slots.get() if self._slots is not None else nullcontext()

    def dispose(self) -> None:
        self.engine.dispose()


def _configure_sqlite(engine: Engine, busy_timeout_ms: int, *, autocheckpoint: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        # Autocommit at the driver level; SQLAlchemy's "begin" event below issues BEGIN.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA wal_autocheckpoint={int(autocheckpoint)}")
        # Reads through a shared memory map instead of a read() call per page missed in
        # the connection's own small cache: a few percent on every read (make bench).
        cur.execute("PRAGMA mmap_size=268435456")
        # A savepoint keeps the original of each page it changes in a sub-journal; in memory,
        # not a temporary file (agent_broker.db.group_commit runs each request in one).
        cur.execute("PRAGMA temp_store=MEMORY")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):  # type: ignore[no-untyped-def]
        dbapi_connection = conn.connection.dbapi_connection
        if dbapi_connection.in_transaction:
            return  # a light session began it already (agent_broker.db.light)
        mode = conn.get_execution_options().get(BEGIN_MODE, "IMMEDIATE")
        # Straight to the driver: this runs for every request, and exec_driver_sql's
        # execution machinery costs several times the statement itself.
        dbapi_connection.execute(_BEGIN[mode])


def _refuse_closed_by_server(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """What SQLAlchemy's pre-ping is for, without its round trip on every checkout (about
    6% of a deal cycle's CPU on PostgreSQL: docs/decisions/performance-5-postgresql-inline.md).
    A pooled connection is idle: the server sends nothing on it unasked, except when it
    closes it (a restart, pg_terminate_backend, an idle timeout), which leaves its last
    message and end-of-file to be read. So input waiting on an idle connection means it is
    gone; as after a failed ping, the pool drops it and every connection older than it,
    and opens a new one for this checkout."""
    poller = select.poll()
    poller.register(dbapi_connection.pgconn.socket, select.POLLIN)
    if poller.poll(0):
        raise sa_exc.InvalidatePoolError("the server closed this pooled connection")


CONNECT_TIMEOUT_SECONDS = 5


def _postgresql_connect_args(settings: Settings, url: Any, work: Work) -> dict[str, Any]:
    # Hot statements are prepared by agent_broker.db.libpq under names of its own.
    # psycopg's own preparing stays off: after a rollback it deallocates every statement of
    # the session (DEALLOCATE ALL), those names included.
    args: dict[str, Any] = {"prepare_threshold": None}
    if "connect_timeout" not in url.query:
        # While the server restarts a request answers 503 rather than wait on a connection
        # attempt that may never complete (unless the URL sets its own limit).
        args["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    limits = limits_ms(settings, work)
    if limits is not None:
        given = url.query.get("options")
        if not isinstance(given, str):
            given = os.environ.get("PGOPTIONS")
        args["options"] = startup_options(given, *limits)
    return args


def _bound_libpq_waits(engine: Engine, statement_timeout_ms: int) -> None:
    """The libpq path waits for the server no longer than its statement timeout allows
    (agent_broker.db.libpq); set once per connection, as it opens."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        libpq.bound_waits(dbapi_conn, statement_timeout_ms / 1000)


def create_database(settings: Settings, *, work: Work = "requests") -> Database:
    """The database, its connections set for `work`: "requests" (the service's), "jobs"
    (scheduled jobs and the CLI, with the longer statement limit) or "migrations" (the
    server's own limits; agent_broker.db.timeouts)."""
    # hide_parameters: bound values (API key hashes, contact details, request text) stay out
    # of database errors, and so out of logs and tracebacks; the SQL itself is still shown.
    url = make_url(settings.database_url)
    checkpointer = None
    on_file = False
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={
                "check_same_thread": False,
                "timeout": settings.sqlite_busy_timeout_ms / 1000,
                "factory": BatchingConnection,
            },
            pool_size=settings.db_pool_size,
            max_overflow=MAX_OVERFLOW,
            hide_parameters=True,
        )
        on_file = bool(url.database) and url.database != ":memory:"
        if on_file:
            # The log is checkpointed off the request path (agent_broker.db.checkpoint).
            checkpointer = WalCheckpointer(
                url.database, busy_timeout_ms=settings.sqlite_busy_timeout_ms
            )
        _configure_sqlite(
            engine,
            settings.sqlite_busy_timeout_ms,
            autocheckpoint=BACKSTOP_PAGES if on_file else 1000,  # else SQLite's default
        )
        reader_bind = engine.execution_options(**{BEGIN_MODE: "DEFERRED"})
        begin_read: str | None = _BEGIN["DEFERRED"]
        begin_write: str | None = _BEGIN["IMMEDIATE"]
    else:
        engine = create_engine(
            url,
            connect_args=_postgresql_connect_args(settings, url, work),
            pool_size=settings.db_pool_size,
            max_overflow=MAX_OVERFLOW,
            hide_parameters=True,
        )
        event.listen(engine, "checkout", _refuse_closed_by_server)
        limits = limits_ms(settings, work)
        if limits is not None and limits[0]:
            _bound_libpq_waits(engine, limits[0])
        reader_bind = engine
        begin_read = begin_write = None
    # Sessions know whether their blocking work may run on the event loop and, when not, on
    # how many threads (see dispatch). Inline work takes the write gate: a writer waiting in
    # the database must never be waiting for a writer of its own event loop.
    on_sqlite = url.get_backend_name() == "sqlite"
    inline = on_sqlite or settings.db_dispatch == "inline"
    slots = None if on_sqlite else settings.db_pool_size
    info: dict = {"inline": inline}
    if not inline:
        threads = settings.db_pool_size + 1
        info[THREADS] = PerLoop(lambda: CapacityLimiter(threads))

    def light_sessions(bind: Engine, begin_sql: str | None) -> sessionmaker[Session]:
        return sessionmaker(
            class_=LightSession, bind=bind, begin_sql=begin_sql, expire_on_commit=False, info=info
        )

    return Database(
        engine=engine,
        writer=light_sessions(engine, begin_write),
        reader=light_sessions(reader_bind, begin_read),
        serialise_writes=inline,
        group_commit=on_file,
        session_slots=slots,
        checkpointer=checkpointer,
    )


def jobs_database(db: Database, settings: Settings) -> Database:
    """The database the scheduled jobs of a serving process use, beside the requests' `db`:
    on PostgreSQL an engine of its own, whose connections carry the jobs' longer statement
    limit (agent_broker.db.timeouts); on SQLite, which has no such limit, `db` itself."""
    return db if db.engine.dialect.name == "sqlite" else create_database(settings, work="jobs")
