"""The application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from agent_broker import RELEASE_TAG
from agent_broker.accounts.routes import router as accounts_router
from agent_broker.config import Settings
from agent_broker.db.engine import create_database
from agent_broker.deals.routes import router as deals_router
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.jobs.runner import Scheduler
from agent_broker.listings.routes import router as listings_router
from agent_broker.logging import configure as configure_logging
from agent_broker.meta.routes import router as meta_router
from agent_broker.problems import install_handlers
from agent_broker.reputation.routes import router as reputation_router
from agent_broker.threads.routes import router as threads_router
from agent_broker.tokens.routes import router as tokens_router


def create_app(settings: Settings | None = None, *, run_jobs: bool | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level)
    db = create_database(settings)
    scheduler = (
        Scheduler(db, settings)
        if (settings.jobs_enabled if run_jobs is None else run_jobs)
        else None
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if scheduler:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler:
                scheduler.stop()
            db.dispose()

    app = FastAPI(
        title="agent-broker",
        version=RELEASE_TAG,
        description="Marketplace broker for automated agents.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db = db
    app.state.rate_limiter = RateLimiter(settings)
    install_handlers(app)
    app.include_router(meta_router)
    app.include_router(accounts_router)
    app.include_router(listings_router)
    app.include_router(threads_router)
    app.include_router(deals_router)
    app.include_router(reputation_router)
    app.include_router(tokens_router)
    return app


def app_factory() -> FastAPI:
    """Entry point for uvicorn --factory (each worker builds its own app)."""
    return create_app()
