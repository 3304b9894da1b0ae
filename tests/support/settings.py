"""Values every test app is configured with (tests/conftest.py, make_settings), and the
servers the tests reach: PostgreSQL and Redis."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

TEST_SECRET = "test-key-hash-secret-0123456789abcdef"
# BROKER_PUBLIC_BASE_URL of the test apps: the links they print start with it.
PUBLIC_BASE_URL = "https://broker.test"

PG_ADMIN_DSN = os.environ.get(
    "BROKER_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def _redis_url_of_this_worker() -> str:
    """BROKER_TEST_REDIS_URL (database 15 of a local Redis by default), moved down one
    database for each pytest-xdist worker after the first (15, 14, ...): what one worker
    counts or resets there never reaches another's tests."""
    url = urlsplit(os.environ.get("BROKER_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))
    worker = os.environ.get("PYTEST_XDIST_WORKER") or "gw0"  # gw0, gw1, ...
    database = int(url.path.strip("/") or 0) - int(worker.removeprefix("gw"))
    return urlunsplit(url._replace(path=f"/{database % 16}"))


REDIS_URL = _redis_url_of_this_worker()
