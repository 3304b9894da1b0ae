"""A worker's start-up publishes its signing key; one that starts while the database is
out of reach (a replacement for a worker that died during a restart) waits for the
database rather than fail, since a worker that fails to start stops the whole service
under `serve --workers N` (agent_broker.tokens.startup, docs/operators/what-clients-see.md)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import exc as sa_exc
from sqlalchemy import select

from agent_broker.tokens import startup
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.models import SigningKey
from tests.support.forwarder import forwarding, url_through
from tests.support.http import free_port

DELAY = 1.5  # how long the database is out of reach when a test's app starts


@pytest.fixture
def late_database(database_url: str) -> Iterator[Callable[[float], str]]:
    """The test's PostgreSQL database behind a port that opens late: its URL."""
    if not database_url.startswith("postgresql"):
        pytest.skip("a server that refuses connections: PostgreSQL's")
    with ExitStack() as stack:

        def url(opens_after: float) -> str:
            forwarder = stack.enter_context(forwarding(database_url))
            forwarder.open_after(opens_after)
            return url_through(database_url, forwarder)

        yield url


def _published_kids(app: FastAPI) -> set[str]:
    with app.state.context.db.reader() as session:
        return set(session.execute(select(SigningKey.kid)).scalars())


def test_a_worker_starting_while_the_database_is_down_waits_and_publishes_its_key(
    make_app: Callable[..., FastAPI], late_database: Callable[[float], str]
) -> None:
    app = make_app(database_url=late_database(DELAY))
    began = time.monotonic()
    with TestClient(app) as client:  # the app's start-up runs here
        waited = time.monotonic() - began
        assert client.get("/health").status_code == 200
        kid = app.state.context.part(Signer).kid
        assert kid in _published_kids(app)
        keys = client.get("/.well-known/paseto-keys.json").json()["keys"]
        assert [key["kid"] for key in keys if key["current"]] == [kid]
    assert waited >= DELAY


def test_a_worker_gives_up_once_the_database_stays_out_of_reach(
    make_app: Callable[..., FastAPI],
) -> None:
    app = make_app(database_url=f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test")
    began = time.monotonic()
    with pytest.raises(sa_exc.OperationalError):
        asyncio.run(
            startup.register_when_reachable(
                app.state.context.db, app.state.context.part(Signer), patience=1.0
            )
        )
    # It tried more than once, and stopped near its patience.
    assert 0.7 <= time.monotonic() - began < 3.0


def test_an_error_that_is_no_outage_fails_the_start_at_once(
    make_app: Callable[..., FastAPI], tmp_path
) -> None:
    empty = tmp_path / "no-tables.db"
    app = make_app(database_url=f"sqlite:///{empty}")
    began = time.monotonic()
    with pytest.raises(sa_exc.OperationalError, match="no such table"):
        asyncio.run(
            startup.register_when_reachable(
                app.state.context.db, app.state.context.part(Signer), patience=30.0
            )
        )
    assert time.monotonic() - began < startup.FIRST_PAUSE
