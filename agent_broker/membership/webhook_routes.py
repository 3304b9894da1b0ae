"""Where an account receives its events (agent_broker.webhooks keeps the endpoints and
delivers), over HTTP under /v1/account."""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import WriteSession
from agent_broker.http.policy import authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.webhooks import service
from agent_broker.webhooks.schemas import WebhookOut, WebhookRequest

router = broker_router(prefix="/v1/account", tags=["accounts"])
Owner = Annotated[Caller, authenticated(writes=True)]


@router.put(
    "/webhook",
    response_model=WebhookOut,
    responses=problems(400, 401, 403),
    summary="Receive signed events of your threads and deals at this URL",
)
@db_bound
def put_webhook(body: WebhookRequest, caller: Owner, session: WriteSession) -> dict:
    return service.set_endpoint(session, caller.account_id, body.url, now=clock.now())


@router.delete(
    "/webhook",
    status_code=204,
    response_class=Response,
    responses=problems(401, 403),
    summary="Stop the events (those not yet delivered are dropped)",
)
@db_bound
def delete_webhook(caller: Owner, session: WriteSession) -> Response:
    service.delete_endpoint(session, caller.account_id)
    return Response(status_code=204)
