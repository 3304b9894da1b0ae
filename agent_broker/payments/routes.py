from __future__ import annotations

from typing import Annotated

from fastapi import Request
from fastapi.responses import HTMLResponse, PlainTextResponse

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.http.policy import KEY_OR_SESSION, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.payments import callbacks, pay_page, service
from agent_broker.payments.schemas import CallbackReceived, CreateInvoiceRequest, InvoiceResponse

dashboard = broker_router(prefix="/dashboard", tags=["dashboard"])
webhooks = broker_router(prefix="/webhooks", tags=["webhooks"])


@dashboard.post(
    "/credits",
    status_code=201,
    response_model=InvoiceResponse,
    responses=problems(400, 401, 403, 429, 502),
)
async def create_invoice(
    request: Request,
    body: CreateInvoiceRequest,
    # Read in a transaction of its own: the processor is called with none open.
    caller: Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, detached=True)],
) -> dict:
    context = context_of(request)
    return await service.create_invoice(
        context.db,
        context.settings,
        context.operator_outbound,
        context.rate_limiter,
        caller.account_id,
        pack_count=body.pack_count,
        processor=body.processor,
        chain=body.chain,
        now=clock.now(),
    )


@dashboard.get(
    "/pay/{address}",
    response_class=HTMLResponse,
    responses={200: {"content": {"text/html": {}}}, **problems(404)},
)
@db_bound
def pay(address: str, session: ReadSession) -> HTMLResponse:
    return HTMLResponse(pay_page.render(session, address))


@webhooks.post(
    "/processor-a", response_model=CallbackReceived, responses=problems(400, 401, 404, 409)
)
async def processor_a_callback(request: Request) -> dict:
    context = context_of(request)
    return await callbacks.processor_a(
        context.db,
        context.settings,
        await request.body(),
        content_type=request.headers.get("content-type", ""),
        signature=request.headers.get("x-webhook-signature"),
        now=clock.now(),
    )


@webhooks.post(
    "/processor-b",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"example": "*ok*"}}},
        **problems(400, 403, 404, 409),
    },
)
async def processor_b_callback(request: Request) -> PlainTextResponse:
    context = context_of(request)
    answer = await callbacks.processor_b(
        context.db,
        context.settings,
        await request.body(),
        content_type=request.headers.get("content-type", ""),
        query=dict(request.query_params),
        source=client_ip(request),
        now=clock.now(),
    )
    return PlainTextResponse(answer)
