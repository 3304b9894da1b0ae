from __future__ import annotations

from fastapi import Request

from agent_broker import RELEASE_TAG, clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.routing import broker_router
from agent_broker.meta import service
from agent_broker.meta.build import fingerprint
from agent_broker.meta.schemas import Health, Stats, Status, Version

router = broker_router(tags=["meta"])


def _cache(request: Request) -> service.DocumentCache:
    state = request.app.state
    if not hasattr(state, "meta_documents"):
        state.meta_documents = service.DocumentCache()
    return state.meta_documents


@router.get("/health", response_model=Health)
@router.get("/a2a/health", response_model=Health, summary="Health, beside the A2A endpoint")
async def health() -> dict:
    return {"status": "ok", "build": fingerprint()}


@router.get("/version", response_model=Version)
async def version() -> dict:
    return {"version": RELEASE_TAG}


@router.get(
    "/status.json",
    response_model=Status,
    summary="30-day uptime history and incidents, from the service's own health samples",
)
@db_bound
def status(request: Request, session: ReadSession) -> dict:
    return service.status(session, request.app.state.settings, _cache(request), now=clock.now())


@router.get(
    "/stats.json",
    response_model=Stats,
    summary="Public marketplace aggregate; withheld figures are null",
)
@db_bound
def stats(request: Request, session: ReadSession) -> dict:
    return service.stats(session, _cache(request), now=clock.now())
