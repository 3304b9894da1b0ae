from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Request, Response

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.deals import feedback, service, settlement
from agent_broker.deals.schemas import (
    DealPackage,
    DeliveryRequest,
    RatingRequest,
    RejectionRequest,
    RulingRequest,
)
from agent_broker.http.context import context_of
from agent_broker.http.idempotency import RequiredIdempotency, answer
from agent_broker.http.policy import authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.tokens.keys import Signer

router = broker_router(prefix="/v1", tags=["deals"])

Party = Annotated[Caller, authenticated(metered=True, writes=True)]
MeteredReader = Annotated[Caller, authenticated(metered=True)]


@router.get(
    "/deals/{deal_id}",
    response_model=DealPackage,
    response_model_exclude_none=True,
    responses=problems(401, 403, 404, 410),
)
@db_bound
def read_deal(request: Request, deal_id: str, caller: MeteredReader, session: ReadSession) -> dict:
    return service.read(
        session,
        caller.account_id,
        deal_id,
        signer=context_of(request).part(Signer),
        now=clock.now(),
    )


@router.post(
    "/deals/{deal_id}/ratings",
    status_code=201,
    response_class=Response,
    responses=problems(400, 401, 403, 404, 409, 410),
)
@db_bound
def rate_deal(deal_id: str, body: RatingRequest, caller: Party, session: WriteSession) -> Response:
    feedback.rate(
        session,
        caller.account_id,
        deal_id,
        score=body.score,
        delivered=body.delivered,
        now=clock.now(),
    )
    return Response(status_code=201)


@router.post(
    "/deals/{deal_id}/dispute",
    status_code=201,
    response_class=Response,
    responses=problems(401, 403, 404, 409, 410),
)
@db_bound
def dispute_deal(deal_id: str, caller: Party, session: WriteSession) -> Response:
    feedback.dispute(session, caller.account_id, deal_id, now=clock.now())
    return Response(status_code=201)


# --- Escrow deals: delivery, acceptance, rejection, ruling (docs/interface.md §11.4) ----

# A party's step on its own deal: not among the payable (x402) operations.
EscrowStep = Annotated[Caller, authenticated(writes=True)]
Handler = Callable[..., Any]


def _escrow_step(step: str) -> Callable[[Handler], Handler]:
    """Each step answers with the deal as its caller reads it, or a problem document."""
    return router.post(
        f"/deals/{{deal_id}}/{step}",
        response_model=DealPackage,
        response_model_exclude_none=True,
        responses=problems(400, 401, 403, 404, 409, 410),
    )


@_escrow_step("delivery")
@db_bound
def deliver(
    request: Request,
    response: Response,
    deal_id: str,
    body: DeliveryRequest,
    caller: EscrowStep,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    outcome = settlement.deliver(
        session,
        caller.account_id,
        deal_id,
        idempotency,
        note=body.note,
        evidence_sha256=body.evidence_sha256,
        signer=context_of(request).part(Signer),
        now=clock.now(),
    )
    return answer(response, outcome)


@_escrow_step("acceptance")
@db_bound
def accept(
    request: Request,
    response: Response,
    deal_id: str,
    caller: EscrowStep,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    outcome = settlement.accept(
        session,
        caller.account_id,
        deal_id,
        idempotency,
        signer=context_of(request).part(Signer),
        now=clock.now(),
    )
    return answer(response, outcome)


@_escrow_step("rejection")
@db_bound
def reject(
    request: Request,
    response: Response,
    deal_id: str,
    body: RejectionRequest,
    caller: EscrowStep,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    outcome = settlement.reject(
        session,
        caller.account_id,
        deal_id,
        idempotency,
        reason=body.reason,
        signer=context_of(request).part(Signer),
        now=clock.now(),
    )
    return answer(response, outcome)


@_escrow_step("ruling")
@db_bound
def rule(
    request: Request,
    response: Response,
    deal_id: str,
    body: RulingRequest,
    caller: EscrowStep,
    session: WriteSession,
    idempotency: RequiredIdempotency,
) -> dict:
    outcome = settlement.rule(
        session,
        caller.account_id,
        deal_id,
        idempotency,
        outcome=body.outcome,
        seller_share_bps=body.seller_share_bps,
        reason=body.reason,
        signer=context_of(request).part(Signer),
        now=clock.now(),
    )
    return answer(response, outcome)
