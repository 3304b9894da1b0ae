"""SQLite's WAL checkpoints, on a thread of their own while the service runs.

By default SQLite copies the write-ahead log back into the database file on the commit that
finds the log past 1,000 pages, on the committing connection. The service's SQLite work
runs on the event loop (agent_broker.db.dispatch), so that commit held every request up:
about one commit in a hundred of a deal cycle took 1 to 8 ms, half the time all commits
took together. While the service runs, a thread with its own connection checkpoints
instead, PASSIVE (it never waits for a reader or the writer), a few times a second; the
driver lets go of the GIL while SQLite copies and syncs. The service's connections keep
an automatic checkpoint at a much larger log as a backstop, so a stalled thread cannot let
the log grow without bound."""

from __future__ import annotations

import sqlite3
import threading

import structlog

log = structlog.get_logger(__name__)

# Pages of log (4 KiB each) past which a committing connection checkpoints itself: only
# reached when the thread below is not keeping up or not running.
BACKSTOP_PAGES = 20_000
EVERY_S = 0.2


class WalCheckpointer:
    """Checkpoints the database at `path` every `every_s` seconds until stopped."""

    def __init__(self, path: str, *, busy_timeout_ms: int, every_s: float = EVERY_S) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.every_s = every_s
        self.runs = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self.path, isolation_level=None)
            connection.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
        except sqlite3.Error as error:
            # The connections' own backstop checkpoints instead.
            log.warning("wal_checkpointer_not_started", error_class=type(error).__name__)
            return
        try:
            while not self._stop.wait(self.every_s):
                self.checkpoint(connection)
        finally:
            connection.close()

    def checkpoint(self, connection: sqlite3.Connection) -> None:
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.runs += 1
        except sqlite3.Error as error:
            # The next run tries again; the connections' backstop bounds the log meanwhile.
            log.warning("wal_checkpoint_failed", error_class=type(error).__name__)
