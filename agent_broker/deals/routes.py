from __future__ import annotations

from fastapi import APIRouter, Request

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.deals import service
from agent_broker.deals.schemas import DealPackage
from agent_broker.http.auth import ReadCaller
from agent_broker.http.responses import problems

router = APIRouter(prefix="/v1", tags=["deals"])


@router.get(
    "/deals/{deal_id}",
    response_model=DealPackage,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404, 410),
)
@db_bound
def read_deal(request: Request, deal_id: str, caller: ReadCaller, session: ReadSession) -> dict:
    return service.read(
        session, caller.account_id, deal_id, signer=request.app.state.signer, now=clock.now()
    )
