from __future__ import annotations

import json
from typing import Annotated

from fastapi import Depends, Request, Response

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.deals.schemas import DealPackage
from agent_broker.http.context import context_of
from agent_broker.http.idempotency import RequiredIdempotency, answer
from agent_broker.http.policy import KEY_OR_OAUTH, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.http.screening import Screens
from agent_broker.threads import sealing, service
from agent_broker.threads.schemas import DiffRequest, ThreadOut, ThreadRead
from agent_broker.tokens.keys import Signer

router = broker_router(prefix="/v1", tags=["threads"])


async def _agreed_price(request: Request) -> int | None:
    """A finalize body's agreed_price_micro, when it is a JSON object naming an integer one.
    Any other body is accepted and ignored, as it always was; only an escrow listing
    checks the price (docs/interface.md §11.4)."""
    try:
        body = json.loads(await request.body() or b"null")
    except ValueError:
        return None
    price = body.get("agreed_price_micro") if isinstance(body, dict) else None
    return price if type(price) is int else None


AgreedPrice = Annotated[int | None, Depends(_agreed_price)]

Trader = Annotated[Caller, authenticated(metered=True, writes=True)]
# Finalize also takes an agent OAuth token, once per token (409 oauth_token_replay).
Finalizer = Annotated[Caller, authenticated(kinds=KEY_OR_OAUTH, metered=True, writes=True)]
MeteredReader = Annotated[Caller, authenticated(metered=True)]
Reader = Annotated[Caller, authenticated()]


@router.post(
    "/listings/{listing_id}/threads",
    status_code=201,
    response_model=ThreadOut,
    responses=problems(400, 401, 402, 403, 404, 409, 410, 422, 428, 429),
)
@db_bound
def open_thread(
    request: Request,
    response: Response,
    listing_id: str,
    body: DiffRequest,
    caller: Trader,
    session: WriteSession,
    idempotency: RequiredIdempotency,
    screens: Screens,
) -> dict:
    outcome = service.open_thread_once(
        session,
        caller.account,
        listing_id,
        body.diff,
        idempotency,
        screen=screens.for_caller(caller),
        ttl=context_of(request).settings.thread_ttl,
        now=clock.now(),
        price_micro=body.price_micro,
    )
    return answer(response, outcome)


@router.get(
    "/listings/{listing_id}/threads",
    response_model=list[ThreadRead],
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def listing_inbox(listing_id: str, caller: MeteredReader, session: ReadSession) -> list[dict]:
    return service.inbox(session, caller.account_id, listing_id, now=clock.now())


@router.get(
    "/threads/mine",
    response_model=list[ThreadRead],
    response_model_exclude_none=True,
    responses=problems(401, 403),
)
@db_bound
def my_threads(caller: Reader, session: ReadSession) -> list[dict]:
    return service.mine(session, caller.account_id, now=clock.now())


@router.get(
    "/threads/{thread_id}",
    response_model=ThreadRead,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def read_thread(thread_id: str, caller: MeteredReader, session: ReadSession) -> dict:
    return service.read(session, caller.account_id, thread_id, now=clock.now())


@router.post(
    "/threads/{thread_id}/offers",
    response_model=ThreadOut,
    responses=problems(400, 401, 402, 403, 404, 409, 410, 422, 429),
)
@db_bound
def make_offer(
    thread_id: str,
    body: DiffRequest,
    caller: Trader,
    session: WriteSession,
    screens: Screens,
) -> dict:
    return service.offer(
        session,
        caller.account_id,
        thread_id,
        body.diff,
        screen=screens.for_caller(caller),
        now=clock.now(),
        price_micro=body.price_micro,
    )


@router.post(
    "/threads/{thread_id}/close",
    response_model=ThreadOut,
    responses=problems(400, 401, 403, 404, 409, 410),
)
@db_bound
def close_thread(
    response: Response,
    thread_id: str,
    caller: Trader,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    # Any body is ignored (docs/interface.md §10.5).
    outcome = service.close_once(
        session, caller.account_id, thread_id, idempotency, now=clock.now()
    )
    return answer(response, outcome)


@router.post(
    "/threads/{thread_id}/finalize",
    status_code=201,
    response_model=DealPackage,
    response_model_exclude_none=True,
    responses=problems(400, 401, 402, 403, 404, 409, 410),
)
@db_bound
def finalize_thread(
    request: Request,
    response: Response,
    thread_id: str,
    caller: Finalizer,
    session: WriteSession,
    idempotency: RequiredIdempotency,
    agreed_price: AgreedPrice,
) -> dict:
    context = context_of(request)
    outcome = sealing.finalize_once(
        session,
        caller.account,
        thread_id,
        idempotency,
        signer=context.part(Signer),
        now=clock.now(),
        one_time_token=caller.token,
        escrow_fee_bps=context.settings.escrow_fee_bps,
        agreed_price_micro=agreed_price,
    )
    return answer(response, outcome)
