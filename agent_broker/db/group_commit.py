"""The write gate of an event loop, and on SQLite the group commit behind it.

Write requests of one process take turns at the gate (agent_broker.db.dispatch says why).
On SQLite, a commit writes every page the transaction touched to the write-ahead log, a
frame and a checksum each: a posted listing touches some 25 pages (the listing, its five
feed indexes and search entry, the journal, the wallets, the idempotency record), and its
commit was a fifth of the request's CPU. Many of those pages are the same for the next
writer (the newest end of each index, the journal's, the search index's), so when writers
are queued at the gate they share one transaction and one commit:

- each request's work runs inside a savepoint of the shared transaction: a request that
  fails rolls back to its savepoint, and only its own work is undone;
- a request whose work is done hands the gate to the next writer in line while the
  transaction stays open, and waits; the last of the group (nobody in line, or
  MAX_GROUP requests in it) commits for all, then each one's response is sent. A request
  alone at the gate commits at once, as before;
- if the commit fails, every request of the group fails with that error, and nothing of
  the group was written, so a retry with the same Idempotency-Key runs afresh.

The group's connection is checked out of the pool once for the whole group; each request's
session borrows it (SQLAlchemy's nested checkout of a pooled connection), so it is never
checked in, nor reset, while the transaction is open. Its driver connection
(BatchingConnection) turns a member's commit into RELEASE and its rollback into ROLLBACK
TO, whoever asks (the light session, the ORM): only the group ends the transaction."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy.orm import Session
from sqlalchemy.pool import Pool, PoolProxiedConnection

from agent_broker.db.sqlalchemy_internals import nested_checkout

log = structlog.get_logger(__name__)

# Requests per commit at most: past this the next one in line starts a new group, so the
# first request of a group waits for at most this many others' work.
MAX_GROUP = 16

_SAVEPOINT = "group_member"


class BatchingConnection(sqlite3.Connection):
    """The driver connection of a SQLite engine with group commit. Outside a group it is a
    plain sqlite3 connection. Inside one, commit() and rollback() end the current member's
    savepoint instead of the transaction (a second call does nothing), so that the ORM and
    the pool cannot end the group's transaction; GroupCommit ends it."""

    grouped = False  # the connection holds a group's open transaction
    member = False  # a member's savepoint is open

    def commit(self) -> None:
        if not self.grouped:
            super().commit()
        elif self.member:
            self.member = False
            self.execute(f"RELEASE {_SAVEPOINT}")

    def rollback(self) -> None:
        if not self.grouped:
            super().rollback()
        elif self.member:
            self.member = False
            self.execute(f"ROLLBACK TO {_SAVEPOINT}")
            self.execute(f"RELEASE {_SAVEPOINT}")


class GroupLost(sqlite3.OperationalError):
    """SQLite ended the group's transaction itself (it does on some I/O errors): the work of
    the requests waiting on it was not written."""


class GroupCommit:
    """The open group of one event loop: its connection and the requests waiting on it."""

    def __init__(self, pool: Pool, begin_sql: str) -> None:
        self._pool = pool
        self._begin_sql = begin_sql
        self._held: PoolProxiedConnection | None = None
        self._waiting: list[asyncio.Future[None]] = []
        self._after: list[Callable[[], None]] = []  # to run once the group is committed

    @property
    def is_open(self) -> bool:
        return self._held is not None

    @property
    def size(self) -> int:
        """Requests whose work is in the open group and who wait for its commit."""
        return len(self._waiting)

    def checkout(self) -> PoolProxiedConnection:
        """The group's connection for one request's session; closing it gives it back to
        the group, not to the pool."""
        if self._held is None:
            held = self._pool.connect()
            held.dbapi_connection.grouped = True  # type: ignore[union-attr]
            self._held = held
        return nested_checkout(self._held)

    def begin_member(self, connection: Any) -> None:
        """Open a request's savepoint, and the group's transaction if it is the first."""
        if not connection.in_transaction:
            if self._waiting:
                self._fail_waiting(GroupLost("the group's transaction ended before its commit"))
            connection.execute(self._begin_sql)
        connection.execute(f"SAVEPOINT {_SAVEPOINT}")
        connection.member = True

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the open group is committed; never if it is not."""
        self._after.append(callback)

    def join(self) -> asyncio.Future[None]:
        """Wait for the group's commit (the caller's work is in it)."""
        waiting = asyncio.get_running_loop().create_future()
        self._waiting.append(waiting)
        return waiting

    def commit(self) -> None:
        """Commit the open group and tell the requests waiting on it; raises what failed."""
        held, waiting, after = self._held, self._waiting, self._after
        self._held, self._waiting, self._after = None, [], []
        if held is None:
            return
        connection: Any = held.dbapi_connection
        error: BaseException | None = None
        try:
            if connection.in_transaction:
                sqlite3.Connection.commit(connection)
            elif waiting:
                error = GroupLost("the group's transaction ended before its commit")
        except BaseException as failed:  # noqa: BLE001 - given to every member, re-raised
            error = failed
            # Checked in below either way: the pool resets the connection or drops it.
            with contextlib.suppress(sqlite3.Error):
                sqlite3.Connection.rollback(connection)
        finally:
            connection.grouped = connection.member = False
            held.close()
        self._settle(waiting, error)
        if error is not None:
            raise error
        for callback in after:
            try:
                callback()
            except Exception as failed:  # noqa: BLE001 - the commit stands; the rest still run
                log.warning("after_commit_callback_failed", error_type=type(failed).__name__)

    def _fail_waiting(self, error: BaseException) -> None:
        waiting, self._waiting, self._after = self._waiting, [], []
        self._settle(waiting, error)

    @staticmethod
    def _settle(waiting: list[asyncio.Future[None]], error: BaseException | None) -> None:
        for future in waiting:
            if future.done():  # its request was cancelled while it waited
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


class WriteGate:
    """Write requests of one event loop take turns here; with `group` (SQLite), those in
    line share one commit (see the module's docstring)."""

    def __init__(self, group: GroupCommit | None = None) -> None:
        self.group = group
        self._lock = asyncio.Lock()
        self._waiting = 0

    async def __aenter__(self) -> None:
        self._waiting += 1
        try:
            await self._lock.acquire()
        except BaseException:
            self._waiting -= 1
            # Cancelled in line: if it was the one the group was handed to, the group
            # must not be left open with nobody to commit it.
            if self.group is not None and not self._lock.locked() and not self._waiting:
                with contextlib.suppress(Exception):  # given to the requests waiting on it
                    self.group.commit()
            raise
        self._waiting -= 1

    async def __aexit__(self, *_exc: object) -> None:
        waiting = None
        try:
            group = self.group
            if group is not None and group.is_open:
                if not self._waiting:
                    # The work ran without a pause, so nobody could get in line meanwhile:
                    # let the requests that are ready run up to the gate once.
                    try:
                        await asyncio.sleep(0)
                    except BaseException:
                        # Cancelled in the pause: the group must not stay open behind it.
                        with contextlib.suppress(Exception):  # given to those waiting on it
                            group.commit()
                        raise
                if self._waiting and group.size + 1 < MAX_GROUP:
                    waiting = group.join()
                else:
                    group.commit()
        finally:
            self._lock.release()
        if waiting is not None:
            # Shielded: a request cancelled now still had its work committed with the rest.
            await asyncio.shield(waiting)


def after_durable_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run `callback` now, or, for a request in an open group, once the group's commit has
    written its work (called from a session's after-commit hook)."""
    group: GroupCommit | None = getattr(session, "group", None)
    if group is not None and group.is_open:
        group.after_commit(callback)
    else:
        callback()
