"""Each app's signer, registered when the app starts.

The tokens router carries this lifespan, so every worker (`serve --workers N`, or a
TestClient) publishes its key before serving: the key is in the key document before any
token it signs can be handed out. (The key itself is loaded when the app is built, so a
bad BROKER_SIGNING_KEY stops start-up.) Registration is idempotent, so workers starting
together with one key agree.

A worker may start while the database is out of reach: a replacement for a worker that
died during a database restart, say. It waits for the database (up to
REGISTRATION_PATIENCE) rather than fail its start-up, since a worker that fails to start
makes the process manager stop the whole service (docs/operators/what-clients-see.md,
"During an outage")."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from agent_broker import clock
from agent_broker.db import outages
from agent_broker.db.engine import Database
from agent_broker.http.context import app_context
from agent_broker.tokens import registry
from agent_broker.tokens.keys import Signer

log = structlog.get_logger("agent_broker.tokens")

# How long a starting worker waits for an unreachable or busy database, and the pauses
# between its attempts (doubling up to the longest).
REGISTRATION_PATIENCE = 60.0
FIRST_PAUSE = 0.25
LONGEST_PAUSE = 2.0


def register(db: Database, signer: Signer) -> None:
    with db.writer() as session:
        registry.register_current(session, signer, now=clock.now())
        session.commit()
    log.info("signing key registered", kid=signer.kid)


async def register_when_reachable(
    db: Database, signer: Signer, *, patience: float = REGISTRATION_PATIENCE
) -> None:
    """Register `signer`, trying again while the database is unreachable or does not
    answer in time, for up to `patience` seconds; any other error, or the last outage
    error once patience runs out, is raised."""
    give_up_at = time.monotonic() + patience
    pause = FIRST_PAUSE
    while True:
        try:
            await run_in_threadpool(register, db, signer)
            return
        except Exception as error:
            cause = outages.cause(error)
            if cause is None or time.monotonic() + pause > give_up_at:
                raise
            log.warning("signing key registration waits for the database", cause=cause)
        await anyio.sleep(pause)
        pause = min(pause * 2, LONGEST_PAUSE)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    context = app_context(app)
    await register_when_reachable(context.db, context.part(Signer))
    yield
