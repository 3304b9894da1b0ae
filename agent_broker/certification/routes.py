from __future__ import annotations

from typing import Annotated

from fastapi import Request, Response
from fastapi.responses import PlainTextResponse

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.certification import service, subscription, testing
from agent_broker.certification.bindings import LIVENESS_V1, WEBHOOK_V1
from agent_broker.certification.schemas import CertificationStatus
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.context import context_of
from agent_broker.http.idempotency import RequiredIdempotency, answer
from agent_broker.http.policy import authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(tags=["certification"])


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


@router.get(
    "/v1/account/certification",
    response_model=CertificationStatus,
    response_model_exclude_none=True,
    responses=problems(401, 403),
)
@db_bound
def read_status(caller: Annotated[Caller, authenticated()], session: ReadSession) -> dict:
    return service.status_view(session, caller.account, now=clock.now())


@router.post(
    "/v1/account/certification/test",
    response_model=CertificationStatus,
    response_model_exclude_none=True,
    responses=problems(401, 403, 409, 429),
)
async def free_test(
    request: Request,
    # Read in a transaction of its own: the probe reaches the caller's route and must hold
    # no transaction (nor SQLite's write gate) while it waits.
    caller: Annotated[Caller, authenticated(detached=True)],
) -> dict:
    context = context_of(request)
    return await testing.free_test(
        context.db, context.settings, context.outbound, context.rate_limiter, caller.account
    )


@router.post(
    "/v1/account/certification",
    response_model=CertificationStatus,
    response_model_exclude_none=True,
    responses=problems(400, 401, 402, 403, 409),
)
@db_bound
def subscribe(
    response: Response,
    caller: Annotated[Caller, authenticated(writes=True)],
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    outcome = subscription.subscribe_once(session, caller.account, idempotency, now=clock.now())
    return answer(response, outcome)


@router.post(
    "/v1/account/certification/cancel",
    response_model=CertificationStatus,
    response_model_exclude_none=True,
    responses=problems(401, 403),
)
@db_bound
def cancel(caller: Annotated[Caller, authenticated(writes=True)], session: WriteSession) -> dict:
    return subscription.cancel(session, caller.account, now=clock.now())


@router.get(
    "/bindings/liveness-v1",
    response_class=MarkdownResponse,
    summary="The liveness contract a certified deal route implements",
)
async def liveness_contract() -> MarkdownResponse:
    return MarkdownResponse(LIVENESS_V1)


@router.get(
    "/bindings/webhook-v1",
    response_class=MarkdownResponse,
    summary="The webhook-v1 deal-route binding: how a deal event is delivered",
)
async def webhook_binding() -> MarkdownResponse:
    return MarkdownResponse(WEBHOOK_V1)
