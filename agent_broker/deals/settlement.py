"""An escrow deal's steps after the seal, as the deal's routes, tools and jobs take them:
delivery, acceptance, rejection and ruling (agent_broker.escrow), each answered with the
deal as its caller reads it, once per Idempotency-Key; a settled escrow's deal is kept a
deal's life from its settlement."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session

from agent_broker.deals import service as deals
from agent_broker.escrow import service as escrow
from agent_broker.escrow.models import SETTLED
from agent_broker.escrow.service import Escrow
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.tokens.keys import Signer

Step = Callable[[], Escrow]


def _after(session: Session, moved: Escrow) -> None:
    if moved.status in SETTLED and moved.settled_at is not None:
        deals.extend_purge(session, moved.deal_id, settled_at=moved.settled_at)


def _once(
    session: Session,
    account_id: str,
    deal_id: str,
    key: IdempotencyKey | None,
    step: Step,
    *,
    signer: Signer,
    now: datetime,
) -> Outcome:
    """Take the step once per key; answer with the deal as the caller reads it. Like the
    seal, only the deal's id is kept (the package carries a credential) and a replay
    renders the deal again."""

    def take() -> Outcome:
        moved = step()
        _after(session, moved)
        read = deals.read(session, account_id, deal_id, signer=signer, now=now, held=moved)
        return Outcome(200, read)

    return run_once(
        session,
        account_id,
        key,
        take,
        now=now,
        stored=lambda body: {"deal_id": body["id"]},
        replayed=lambda kept: Outcome(
            kept.status,
            deals.read(session, account_id, kept.body["deal_id"], signer=signer, now=now),
            replayed=True,
        ),
    )


def deliver(
    session: Session,
    account_id: str,
    deal_id: str,
    key: IdempotencyKey | None,
    *,
    note: str | None,
    evidence_sha256: str | None,
    signer: Signer,
    now: datetime,
) -> Outcome:
    def step() -> Escrow:
        return escrow.deliver(
            session, account_id, deal_id, note=note, evidence_sha256=evidence_sha256, now=now
        )

    return _once(session, account_id, deal_id, key, step, signer=signer, now=now)


def accept(
    session: Session,
    account_id: str,
    deal_id: str,
    key: IdempotencyKey | None,
    *,
    signer: Signer,
    now: datetime,
) -> Outcome:
    def step() -> Escrow:
        return escrow.accept(session, account_id, deal_id, now=now)

    return _once(session, account_id, deal_id, key, step, signer=signer, now=now)


def reject(
    session: Session,
    account_id: str,
    deal_id: str,
    key: IdempotencyKey | None,
    *,
    reason: str,
    signer: Signer,
    now: datetime,
) -> Outcome:
    def step() -> Escrow:
        return escrow.reject(session, account_id, deal_id, reason=reason, now=now)

    return _once(session, account_id, deal_id, key, step, signer=signer, now=now)


def rule(
    session: Session,
    account_id: str,
    deal_id: str,
    key: IdempotencyKey | None,
    *,
    outcome: str,
    seller_share_bps: int | None,
    reason: str,
    signer: Signer,
    now: datetime,
) -> Outcome:
    def step() -> Escrow:
        return escrow.rule(
            session,
            account_id,
            deal_id,
            outcome=outcome,
            seller_share_bps=seller_share_bps,
            reason=reason,
            signer=signer,
            now=now,
        )

    return _once(session, account_id, deal_id, key, step, signer=signer, now=now)


def rule_as_operator(
    session: Session,
    deal_id: str,
    *,
    outcome: str,
    seller_share_bps: int | None,
    reason: str,
    signer: Signer,
    now: datetime,
) -> dict:
    """The operator's ruling (agent-broker admin escrow-rule), where no account evaluates;
    the escrow as it settled."""
    ruled = escrow.rule(
        session,
        None,
        deal_id,
        outcome=outcome,
        seller_share_bps=seller_share_bps,
        reason=reason,
        signer=signer,
        now=now,
    )
    _after(session, ruled)
    return {"deal_id": deal_id, "escrow": escrow.view(ruled)}


def settle_due(session: Session, *, now: datetime) -> int:
    """The escrow-deadlines job: settle every escrow past its deadline."""
    settled = escrow.settle_due(session, now=now)
    for moved in settled:
        _after(session, moved)
    return len(settled)
