"""Each app's signer: built and registered when the app starts.

The tokens router carries this lifespan, so every worker (`serve --workers N`, or a
TestClient) loads its key before serving: a bad BROKER_SIGNING_KEY stops start-up, and the
key is published before any token it signs can be handed out. Registration is idempotent,
so workers starting together with one key agree."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from agent_broker import clock
from agent_broker.db.engine import Database
from agent_broker.tokens import registry
from agent_broker.tokens.keys import Signer, signer_for

log = structlog.get_logger("agent_broker.tokens")
_lock = threading.Lock()


def signer_of(app: FastAPI) -> Signer:
    """`app.state.signer`, built on first use when the app was never started through its
    lifespan (the key is then not registered by this process)."""
    signer: Signer | None = getattr(app.state, "signer", None)
    if signer is None:
        with _lock:
            signer = getattr(app.state, "signer", None)
            if signer is None:
                signer = app.state.signer = signer_for(app.state.settings)
    return signer


def register(db: Database, signer: Signer) -> None:
    with db.writer() as session:
        registry.register_current(session, signer, now=clock.now())
        session.commit()
    log.info("signing key registered", kid=signer.kid)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    signer = signer_of(app)
    await run_in_threadpool(register, app.state.db, signer)
    yield
