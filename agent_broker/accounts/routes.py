from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agent_broker import clock
from agent_broker.accounts import service
from agent_broker.accounts.schemas import (
    AccountOut,
    AccountProfileOut,
    ContactRequest,
    RegisterAccountRequest,
    RegisterAccountResponse,
    RouteRequest,
)
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.auth import CurrentCaller, ReadCaller
from agent_broker.http.client_ip import client_ip
from agent_broker.http.idempotency import OptionalIdempotency
from agent_broker.http.responses import problems

router = APIRouter(prefix="/v1/account", tags=["accounts"])


@router.post(
    "/register",
    status_code=201,
    response_model=RegisterAccountResponse,
    response_model_exclude_none=True,
    responses=problems(400, 409, 428, 429),
)
@db_bound
def register(
    request: Request,
    session: WriteSession,
    idempotency: OptionalIdempotency,
    body: RegisterAccountRequest | None = None,
) -> Response:
    settings = request.app.state.settings

    def create() -> tuple[int, dict]:
        made = service.register(
            session,
            settings,
            request.app.state.rate_limiter,
            accepted_terms=body.accepted_terms if body else None,
            source=client_ip(request),
            now=clock.now(),
        )
        return 201, {
            "account_id": made.account_id,
            "api_key": made.api_key,
            "existing": False,
            "account_setup_required": made.setup.as_dict(),
        }

    return idempotency.run(
        session,
        "anonymous",
        create,
        # The key is shown once: a replay answers with the account id only.
        stored=lambda body: {"account_id": body["account_id"]},
        replayed=lambda _status, kept: (200, {"account_id": kept["account_id"], "existing": True}),
    )


@router.get("", response_model=AccountOut, responses=problems(401, 403))
@db_bound
def read_account(caller: ReadCaller, session: ReadSession) -> dict:
    return service.account_view(session, caller.account, now=clock.now())


@router.get("/profile", response_model=AccountProfileOut, responses=problems(401, 403))
@db_bound
def read_profile(caller: ReadCaller, session: ReadSession) -> dict:
    return service.profile_view(session, caller.account, now=clock.now())


@router.put("/contact", status_code=204, response_class=Response, responses=problems(400, 401, 403))
@db_bound
def put_contact(body: ContactRequest, caller: CurrentCaller, session: WriteSession) -> Response:
    service.set_contact(
        session,
        caller.account,
        name=body.contact_name,
        email=body.contact_email,
        url=body.contact_url,
    )
    return Response(status_code=204)


@router.put("/route", status_code=204, response_class=Response, responses=problems(400, 401, 403))
@db_bound
def put_route(
    request: Request, body: RouteRequest, caller: CurrentCaller, session: WriteSession
) -> Response:
    service.set_route(
        session,
        request.app.state.settings,
        caller.account,
        deal_route=body.deal_route,
        binding=body.route_protocol_binding,
        agent_card_url=body.agent_card_url,
    )
    return Response(status_code=204)
