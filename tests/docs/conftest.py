"""The routes the application serves, for the docs tests: one app, made once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from agent_broker.app import create_app
from agent_broker.config import Settings
from tests.support.docs import served_routes
from tests.support.settings import TEST_SECRET


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[str]]:
    """`METHOD /path` of every route in the app's OpenAPI document. The routes are laid
    out when the app is made; nothing here opens the database."""
    var = tmp_path_factory.mktemp("docs-routes")
    settings = Settings(
        database_url=f"sqlite:///{var / 'broker.db'}",
        var_dir=str(var),
        key_hash_secret=TEST_SECRET,
        jobs_enabled=False,
    )
    app: FastAPI = create_app(settings, run_jobs=False)
    try:
        yield served_routes(app)
    finally:
        app.state.db.dispose()
