"""The service as `agent-broker serve` builds it, plus one bare route as the baseline.

The baseline lives in the same app so it goes through the same process, server stack,
middleware and problem handlers as the real routes: the ratio to it then measures only
what a route itself costs (dependencies, database, validation, serialisation)."""

from __future__ import annotations

from fastapi import FastAPI

from agent_broker.app import create_app
from bench.scenarios import BARE_PATH


def app_factory() -> FastAPI:
    """Entry point for `uvicorn bench.app:app_factory --factory`."""
    app = create_app()

    @app.get(BARE_PATH, include_in_schema=False)
    async def bare() -> dict[str, bool]:
        return {"ok": True}

    return app
