"""Throwaway PostgreSQL databases and the Redis check for the PostgreSQL runs.

Each database gets a random name, so benchmarks run by several people on one server do
not collide, and is dropped (connections forced off) when the run ends."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager


class Unavailable(RuntimeError):
    """The server cannot be reached: the PostgreSQL figures are not measured."""


@contextmanager
def fresh_database(admin_dsn: str) -> Iterator[str]:
    """A new empty database on the server `admin_dsn` points at; yields its SQLAlchemy
    URL. Raises Unavailable when the server cannot be reached."""
    try:
        import psycopg

        admin = psycopg.connect(admin_dsn, autocommit=True, connect_timeout=3)
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        raise Unavailable(f"cannot reach PostgreSQL at {admin_dsn}: {exc}") from None
    name = f"bench_{secrets.token_hex(6)}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        base = admin_dsn.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def redis_problem(url: str) -> str | None:
    """Why `url` cannot be used, or None when Redis answers PING."""
    try:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - reported, the run goes on without it
        return f"{type(exc).__name__}: {exc}"
    return None
