"""Registration, the account view and the deal route over HTTP (listed with the account
routes under /v1/account)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Request, Response

from agent_broker import clock
from agent_broker.accounts import service as accounts
from agent_broker.accounts.caller import Caller
from agent_broker.accounts.schemas import (
    AccountOut,
    RegisterAccountRequest,
    RegisterAccountResponse,
    RegistrationReplay,
    RouteRequest,
)
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.http.idempotency import OptionalIdempotency, answer
from agent_broker.http.policy import KEY_OR_SESSION, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.membership import service

router = broker_router(prefix="/v1/account", tags=["accounts"])

Reader = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION)]
Writer = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, writes=True)]


@router.post(
    "/register",
    status_code=201,
    response_model=RegisterAccountResponse,
    response_model_exclude_none=True,
    responses={
        200: {
            "description": "A replay with the same Idempotency-Key: the account id, no key",
            "model": RegistrationReplay,
        },
        **problems(400, 409, 428, 429),
    },
)
@db_bound
def register(
    request: Request,
    response: Response,
    session: WriteSession,
    idempotency: OptionalIdempotency,
    body: RegisterAccountRequest | None = None,
) -> dict:
    outcome = service.register_once(
        session,
        context_of(request).settings,
        context_of(request).rate_limiter,
        idempotency,
        accepted_terms=body.accepted_terms if body else None,
        source=client_ip(request),
        now=clock.now(),
    )
    return answer(response, outcome)


@router.get("", response_model=AccountOut, responses=problems(401, 403))
@db_bound
def read_account(caller: Reader, session: ReadSession) -> dict:
    return service.account_view(session, caller.account, now=clock.now())


@router.put("/route", status_code=204, response_class=Response, responses=problems(400, 401, 403))
@db_bound
def put_route(
    request: Request, body: RouteRequest, caller: Writer, session: WriteSession
) -> Response:
    service.set_route(
        session,
        context_of(request).settings,
        accounts.get(session, caller.account_id),
        deal_route=body.deal_route,
        binding=body.route_protocol_binding,
        agent_card_url=body.agent_card_url,
    )
    return Response(status_code=204)
