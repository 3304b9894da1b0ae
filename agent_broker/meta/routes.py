from __future__ import annotations

from fastapi import Request, Response

from agent_broker import RELEASE_TAG, clock
from agent_broker.db import outages
from agent_broker.db.dispatch import db_bound, run
from agent_broker.db.session import ReadSession, transaction
from agent_broker.http.context import context_of
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.meta import a2a, service
from agent_broker.meta.build import fingerprint
from agent_broker.meta.reachability import Reachability
from agent_broker.meta.schemas import Health, JsonRpcResponse, Stats, Status, Version

router = broker_router(tags=["meta"])


def _cache(request: Request) -> service.DocumentCache:
    return context_of(request).part(service.DocumentCache)


@router.get("/health", response_model=Health)
@router.get("/a2a/health", response_model=Health, summary="Health, beside the A2A endpoint")
async def health(request: Request) -> dict:
    reach = await context_of(request).part(Reachability).now()
    degraded = "unreachable" in reach.values()
    return {"status": "degraded" if degraded else "ok", "build": fingerprint(), **reach}


@router.post(
    "/a2a",
    summary="A2A 1.0 over JSON-RPC 2.0: the onboarding skill (no key, free)",
    description="SendMessage is answered with one message whose one text part is the "
    "onboarding guide; marketplace actions stay REST. Every JSON-RPC answer, error or not, "
    "comes with HTTP 200. The agent card (/.well-known/agent-card.json) describes the agent.",
    responses={
        200: {"model": JsonRpcResponse, "description": "A JSON-RPC 2.0 response"},
        # The body guard's refusals (a NUL in the body, JSON nested too deep).
        **problems(400),
    },
    openapi_extra=a2a.OPENAPI_EXTRA,
)
async def a2a_rpc(request: Request) -> Response:
    return await context_of(request).part(a2a.VersionFirstDispatcher).handle_requests(request)


@router.get("/version", response_model=Version)
async def version() -> dict:
    return {"version": RELEASE_TAG}


@router.get(
    "/status.json",
    response_model=Status,
    summary="30-day uptime history and incidents, from the service's own health samples",
)
async def status(request: Request) -> dict:
    context = context_of(request)
    reach = await context.part(Reachability).now()
    now = clock.now()
    try:
        async with transaction(context.db, write=False) as session:
            document = await run(
                session, service.status, session, context.settings, _cache(request), now=now
            )
    except Exception as exc:
        if outages.cause(exc) is None:
            raise
        # The samples cannot be read: the page still says what is out of reach.
        document = service.last_status(context.settings, _cache(request), now=now)
    return {**document, "dependencies": reach}


@router.get(
    "/stats.json",
    response_model=Stats,
    summary="Public marketplace aggregate; withheld figures are null",
)
@db_bound
def stats(request: Request, session: ReadSession) -> dict:
    return service.stats(session, _cache(request), now=clock.now())
