"""Each app's signer, registered when the app starts.

The tokens router carries this lifespan, so every worker (`serve --workers N`, or a
TestClient) publishes its key before serving: the key is in the key document before any
token it signs can be handed out. (The key itself is loaded when the app is built, so a
bad BROKER_SIGNING_KEY stops start-up.) Registration is idempotent, so workers starting
together with one key agree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import structlog
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from agent_broker import clock
from agent_broker.db.engine import Database
from agent_broker.http.context import app_context
from agent_broker.tokens import registry
from agent_broker.tokens.keys import Signer

log = structlog.get_logger("agent_broker.tokens")


def register(db: Database, signer: Signer) -> None:
    with db.writer() as session:
        registry.register_current(session, signer, now=clock.now())
        session.commit()
    log.info("signing key registered", kid=signer.kid)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    context = app_context(app)
    await run_in_threadpool(register, context.db, context.part(Signer))
    yield
