from __future__ import annotations

from typing import Annotated

from fastapi import Request

from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.domains import proof, service
from agent_broker.domains.schemas import DomainChallengeOut, DomainVerificationOut
from agent_broker.http.context import context_of
from agent_broker.http.policy import KEY_OR_SESSION, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/v1/account/domain", tags=["accounts"])


@router.get("", response_model=DomainChallengeOut, responses=problems(400, 401, 403, 409))
@db_bound
def read_challenge(
    request: Request,
    caller: Annotated[Caller, authenticated(kinds=KEY_OR_SESSION)],
    session: ReadSession,
) -> dict:
    return service.challenge_view(session, context_of(request).settings, caller.account)


@router.post(
    "/verify",
    response_model=DomainVerificationOut,
    response_model_exclude_none=True,
    responses=problems(400, 401, 403, 409, 429),
)
async def verify_domain(
    request: Request,
    # Read in a transaction of its own: verify fetches from the caller's domain and must
    # hold no transaction (nor SQLite's write gate) while it waits.
    caller: Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, detached=True)],
) -> dict:
    context = context_of(request)
    return await proof.verify(
        context.db, context.settings, context.outbound, context.rate_limiter, caller.account
    )
