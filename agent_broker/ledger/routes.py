from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.routing import broker_router
from agent_broker.ledger import verdict
from agent_broker.ledger.schemas import LedgerUnavailable, LedgerVerdict

router = broker_router(prefix="/v1", tags=["ledger"])


@router.get(
    "/ledger/verify",
    response_model=LedgerVerdict,
    responses={
        404: {
            "model": LedgerUnavailable,
            "description": "No verdict has been computed yet, or nothing is sealed",
        },
        503: {
            "model": LedgerUnavailable,
            "description": "The stored verdict cannot be read or is in no recognised state",
        },
    },
)
@db_bound
def verify_ledger(session: ReadSession) -> Any:
    """The ledger-integrity verdict last computed by the hourly sealer (no authentication).
    Serves the stored verdict; checks nothing itself."""
    served = verdict.serve(session, now=clock.now())
    if served.status_code != 200:
        return JSONResponse(served.body, status_code=served.status_code)
    return served.body
