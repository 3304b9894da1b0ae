from __future__ import annotations

from fastapi import APIRouter, Request

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.client_ip import client_ip
from agent_broker.http.responses import problems
from agent_broker.problems import NotFound
from agent_broker.reputation import records
from agent_broker.reputation.schemas import PublicReputation

router = APIRouter(prefix="/v1", tags=["reputation"])

# SPEC 8: 600 lookups per hour per source, unknown handles included (no free enumeration).
LOOKUP_RATE_LIMIT = "600/hour"


@router.get(
    "/reputation/{handle}",
    response_model=PublicReputation,
    response_model_exclude_none=True,
    responses=problems(404, 429),
)
@db_bound
def lookup(request: Request, handle: str, session: ReadSession) -> dict:
    """The public reputation record of a handle (no key)."""
    request.app.state.rate_limiter.hit("reputation-lookup", LOOKUP_RATE_LIMIT, client_ip(request))
    account = records.find_by_handle(session, handle)
    if account is None:
        raise NotFound("No reputation record has this handle.")
    return records.public_record(session, account, now=clock.now())
