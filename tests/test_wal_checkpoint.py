"""SQLite's log is checkpointed by the service's own thread, not by a request's commit
(agent_broker.db.checkpoint): commits leave the log alone up to the backstop, the thread
copies it into the database file, and the app's lifespan starts and stops the thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from agent_broker.app import create_app
from agent_broker.db.checkpoint import BACKSTOP_PAGES
from agent_broker.db.engine import create_database

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
ROW = "x" * 3000  # about one page per row


def _file_size(path: str) -> int:
    return Path(path).stat().st_size if Path(path).exists() else 0


def _wait_for(condition, seconds: float = 10.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@sqlite_only
def test_commits_leave_the_log_to_the_checkpoint_thread(make_settings) -> None:
    settings = make_settings()
    db = create_database(settings)
    assert db.checkpointer is not None
    path = db.checkpointer.path
    try:
        with db.writer() as session:
            session.execute(text("CREATE TABLE filler (body TEXT)"))
            session.commit()
        with db.writer() as session:
            level = session.execute(text("PRAGMA wal_autocheckpoint")).scalar()
        assert level == BACKSTOP_PAGES
        before = _file_size(path)
        # More pages than SQLite's own threshold (1,000), each in a commit of its own: none
        # of those commits copies the log back.
        for _ in range(12):
            with db.writer() as session:
                for _ in range(100):
                    session.execute(text("INSERT INTO filler VALUES (:body)"), {"body": ROW})
                session.commit()
        assert _file_size(path + "-wal") > 1000 * 4096
        assert _file_size(path) < before + 100 * 4096

        db.checkpointer.every_s = 0.02
        db.checkpointer.start()
        try:
            assert _wait_for(lambda: _file_size(path) > before + 1000 * 4096)
        finally:
            db.checkpointer.stop()
        assert db.checkpointer.runs > 0
    finally:
        db.dispose()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "wal-checkpoint"]


@sqlite_only
def test_the_service_checkpoints_while_it_runs(make_settings) -> None:
    app = create_app(make_settings())
    assert _checkpoint_threads() == []
    with TestClient(app) as client:
        assert client.get("/health").status_code == 200
        assert len(_checkpoint_threads()) == 1
    assert _checkpoint_threads() == []
