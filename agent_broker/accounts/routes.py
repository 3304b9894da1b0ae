from __future__ import annotations

from typing import Annotated

from fastapi import Request, Response

from agent_broker import clock
from agent_broker.accounts import service, wallet
from agent_broker.accounts.schemas import (
    AccountOut,
    AccountProfileOut,
    ContactRequest,
    RegisterAccountRequest,
    RegisterAccountResponse,
    RegistrationReplay,
    RouteRequest,
    WalletChallengeOut,
    WalletChallengeRequest,
    WalletRecovered,
    WalletRecoverRequest,
)
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.auth import KEY_OR_SESSION, Caller, authenticated
from agent_broker.http.client_ip import client_ip
from agent_broker.http.idempotency import OptionalIdempotency, answer
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/v1/account", tags=["accounts"])

# The account routes accept an API key or (once built) a dashboard session.
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
        request.app.state.settings,
        request.app.state.rate_limiter,
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


@router.get("/profile", response_model=AccountProfileOut, responses=problems(401, 403))
@db_bound
def read_profile(caller: Reader, session: ReadSession) -> dict:
    return service.profile_view(session, caller.account, now=clock.now())


@router.put("/contact", status_code=204, response_class=Response, responses=problems(400, 401, 403))
@db_bound
def put_contact(body: ContactRequest, caller: Writer, session: WriteSession) -> Response:
    service.set_contact(
        session,
        service.get(session, caller.account_id),
        name=body.contact_name,
        email=body.contact_email,
        url=body.contact_url,
    )
    return Response(status_code=204)


@router.put("/route", status_code=204, response_class=Response, responses=problems(400, 401, 403))
@db_bound
def put_route(
    request: Request, body: RouteRequest, caller: Writer, session: WriteSession
) -> Response:
    service.set_route(
        session,
        request.app.state.settings,
        service.get(session, caller.account_id),
        deal_route=body.deal_route,
        binding=body.route_protocol_binding,
        agent_card_url=body.agent_card_url,
    )
    return Response(status_code=204)


# Wallet key recovery (accounts/wallet.py): no key, since these are how a holder who lost
# it gets back in; rate limited per source address (and per wallet).
@router.post(
    "/wallet/challenge",
    response_model=WalletChallengeOut,
    responses=problems(400, 429),
    summary="A Sign-In with Ethereum message to sign with the paying wallet",
)
async def wallet_challenge(request: Request, body: WalletChallengeRequest) -> dict:
    state = request.app.state
    return await wallet.challenge(
        state.db,
        state.settings,
        state.rate_limiter,
        body.address,
        source=client_ip(request),
        now=clock.now(),
    )


@router.post(
    "/wallet/recover",
    response_model=WalletRecovered,
    responses=problems(400, 404, 429),
    summary="A new API key for the account the signing wallet pays for",
)
async def wallet_recover(request: Request, body: WalletRecoverRequest) -> dict:
    state = request.app.state
    return await wallet.recover(
        state.db,
        state.settings,
        state.rate_limiter,
        body.message,
        body.signature,
        source=client_ip(request),
        now=clock.now(),
    )
