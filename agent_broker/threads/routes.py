from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.deals import service as deals
from agent_broker.deals.schemas import DealPackage
from agent_broker.http.auth import CurrentCaller, ReadCaller
from agent_broker.http.idempotency import RequiredIdempotency
from agent_broker.http.responses import problems
from agent_broker.scanning.brake import CallerScreen
from agent_broker.threads import service
from agent_broker.threads.schemas import DiffRequest, ThreadOut, ThreadRead

router = APIRouter(prefix="/v1", tags=["threads"])


@router.post(
    "/listings/{listing_id}/threads",
    status_code=201,
    response_model=ThreadOut,
    responses=problems(400, 401, 402, 403, 404, 409, 410, 422, 428, 429),
)
@db_bound
def open_thread(
    request: Request,
    listing_id: str,
    body: DiffRequest,
    caller: CurrentCaller,
    session: WriteSession,
    idempotency: RequiredIdempotency,
    screen: CallerScreen,
) -> Response:
    state = request.app.state

    def create() -> tuple[int, dict]:
        thread = service.open_thread(
            session,
            caller.account,
            listing_id,
            body.diff,
            screen=screen,
            ttl=state.settings.thread_ttl,
            now=clock.now(),
        )
        return 201, thread

    return idempotency.run(session, caller.account_id, create)


@router.get(
    "/listings/{listing_id}/threads",
    response_model=list[ThreadRead],
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def listing_inbox(listing_id: str, caller: ReadCaller, session: ReadSession) -> list[dict]:
    return service.inbox(session, caller.account_id, listing_id, now=clock.now())


@router.get(
    "/threads/mine",
    response_model=list[ThreadRead],
    response_model_exclude_none=True,
    responses=problems(401, 403),
)
@db_bound
def my_threads(caller: ReadCaller, session: ReadSession) -> list[dict]:
    return service.mine(session, caller.account_id, now=clock.now())


@router.get(
    "/threads/{thread_id}",
    response_model=ThreadRead,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404),
)
@db_bound
def read_thread(thread_id: str, caller: ReadCaller, session: ReadSession) -> dict:
    return service.read(session, caller.account_id, thread_id, now=clock.now())


@router.post(
    "/threads/{thread_id}/offers",
    response_model=ThreadOut,
    responses=problems(400, 401, 403, 404, 409, 410, 422, 429),
)
@db_bound
def make_offer(
    thread_id: str,
    body: DiffRequest,
    caller: CurrentCaller,
    session: WriteSession,
    screen: CallerScreen,
) -> dict:
    return service.offer(
        session, caller.account_id, thread_id, body.diff, screen=screen, now=clock.now()
    )


@router.post(
    "/threads/{thread_id}/close",
    response_model=ThreadOut,
    responses=problems(400, 401, 403, 404, 409, 410),
)
@db_bound
def close_thread(
    thread_id: str,
    caller: CurrentCaller,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> Response:
    # Any body is ignored (SPEC.md 4.3).
    def do() -> tuple[int, dict]:
        return 200, service.close(session, caller.account_id, thread_id, now=clock.now())

    return idempotency.run(session, caller.account_id, do)


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
    thread_id: str,
    caller: CurrentCaller,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> Response:
    # Any body (e.g. a self-reported agreed price) is accepted and ignored.
    def seal() -> tuple[int, dict]:
        deal = service.finalize(
            session, caller.account, thread_id, signer=request.app.state.signer, now=clock.now()
        )
        return 201, deal

    def replay(status: int, kept: dict) -> tuple[int, dict]:
        # The package carries a bearer credential, so only the deal id is kept; the
        # replay renders the same (deterministic) package again.
        return status, deals.read(
            session,
            caller.account_id,
            kept["deal_id"],
            signer=request.app.state.signer,
            now=clock.now(),
        )

    return idempotency.run(
        session,
        caller.account_id,
        seal,
        stored=lambda body: {"deal_id": body["id"]},
        replayed=replay,
    )
