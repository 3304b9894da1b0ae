from __future__ import annotations

from typing import Annotated

from fastapi import Response

from agent_broker import clock
from agent_broker.accounts import service
from agent_broker.accounts.caller import Caller
from agent_broker.accounts.schemas import (
    AccountProfileOut,
    ContactRequest,
)
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.policy import KEY_OR_SESSION, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/v1/account", tags=["accounts"])

# The account routes accept an API key or (once built) a dashboard session.
Reader = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION)]
Writer = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, writes=True)]


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
