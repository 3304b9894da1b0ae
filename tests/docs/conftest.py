"""The routes the application serves, for the docs tests: one app, made once per run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from agent_broker.app import create_app
from agent_broker.config import Settings
from tests.support.docs import served_routes
from tests.support.settings import TEST_SECRET


@pytest.fixture(scope="session")
def routes_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """One app with every optional route on, for its routes: they are laid out when the app
    is made, and nothing here opens the database."""
    var = tmp_path_factory.mktemp("docs-routes")
    settings = Settings(
        database_url=f"sqlite:///{var / 'broker.db'}",
        var_dir=str(var),
        key_hash_secret=TEST_SECRET,
        jobs_enabled=False,
        metrics_enabled=True,  # /metrics is laid out only when it is on
    )
    made = create_app(settings, run_jobs=False)
    try:
        yield made
    finally:
        made.state.context.db.dispose()


@pytest.fixture(scope="session")
def served(routes_app: FastAPI) -> set[str]:
    """`METHOD /path` of every route in the app's OpenAPI document."""
    return served_routes(routes_app)


@pytest.fixture(scope="session")
def every_route(routes_app: FastAPI) -> set[str]:
    """The same, with the routes the OpenAPI document leaves out."""
    return served_routes(routes_app, hidden=True)
