"""Escrow rules: the state of a deal's held price, who may move it, its deadlines and its
settlement (docs/interface.md §11.4). Every move is one conditional UPDATE on the escrow's
status, so a step that races another (an acceptance and the deadline job, a ruling and an
acceptance, two evaluators' calls) settles the escrow exactly once; the money moves only
through the ledger, in the same transaction. An escrow is its row (agent_broker.escrow.
repository): a named tuple of the table's columns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.escrow import repository
from agent_broker.escrow.errors import EscrowOutOfTurn, EscrowSettled
from agent_broker.escrow.models import OPEN
from agent_broker.escrow.ruling import mint_ruling
from agent_broker.ledger import escrow as money
from agent_broker.problems import Forbidden, InvalidInput, NotFound
from agent_broker.reputation import service as reputation
from agent_broker.tokens.keys import Signer
from agent_broker.webhooks import service as webhooks

Escrow = Any  # an escrow's row (agent_broker.escrow.repository)
FULL = 10_000  # basis points: the whole amount
SHARES = {"release": FULL, "refund": 0}
OUTCOME_STATUS = {"release": "released", "refund": "refunded", "split": "split"}
EVENTS = {"released": "deal.released", "refunded": "deal.refunded", "split": None}


@dataclass(frozen=True)
class EscrowTerms:
    """What an escrow listing fixes for the deals sealed on it."""

    delivery_hours: int
    acceptance_hours: int
    evaluator_id: str | None  # None: the operator evaluates
    evaluator_handle: str | None


def open_escrow(
    session: Session,
    *,
    deal_id: str,
    buyer_id: str,
    seller_id: str,
    amount_micro: int,
    terms: EscrowTerms,
    fee_bps: int,
    counts_for_reputation: bool,
    now: datetime,
) -> Escrow:
    """Record the escrow of a deal being sealed (its price is moved by the seal)."""
    return repository.insert(
        session,
        deal_id=deal_id,
        buyer_id=buyer_id,
        seller_id=seller_id,
        evaluator_id=terms.evaluator_id,
        evaluator_handle=terms.evaluator_handle,
        amount_micro=amount_micro,
        counts_for_reputation=counts_for_reputation,
        fee_bps=fee_bps,
        acceptance_hours=terms.acceptance_hours,
        status="held",
        created_at=now,
        deliver_by=now + timedelta(hours=terms.delivery_hours),
    )


def find(session: Session, deal_id: str) -> Escrow | None:
    return repository.find(session, deal_id)


def is_open(escrow: Escrow | None) -> bool:
    return escrow is not None and escrow.status in OPEN


def held_as_buyer(session: Session, account_id: str) -> int:
    """The prices the account's open escrow deals hold of its money, as buyer."""
    return repository.held_as_buyer(session, account_id)


def view(escrow: Escrow) -> dict[str, Any]:
    """The escrow as the deal shows it to its parties and its evaluator."""
    body: dict[str, Any] = {
        "status": escrow.status,
        "amount_micro": escrow.amount_micro,
        "fee_bps": escrow.fee_bps,
        "deliver_by": clock.rfc3339(escrow.deliver_by),
        "accept_by": clock.rfc3339(escrow.accept_by) if escrow.accept_by else None,
        "evaluator": escrow.evaluator_handle or "operator",
    }
    if escrow.delivered_at is not None:
        body["delivery"] = {
            "delivered_at": clock.rfc3339(escrow.delivered_at),
            "note": escrow.delivery_note,
            "evidence_sha256": escrow.evidence_sha256,
        }
    if escrow.rejected_at is not None:
        body["rejection"] = {
            "rejected_at": clock.rfc3339(escrow.rejected_at),
            "reason": escrow.rejection_reason,
        }
    if escrow.ruled_at is not None:
        body["ruling"] = {
            "outcome": escrow.ruling_outcome,
            "seller_share_bps": escrow.ruling_seller_share_bps,
            "reason": escrow.ruling_reason,
            "ruled_at": clock.rfc3339(escrow.ruled_at),
            "token": escrow.ruling_token,
        }
    if escrow.settled_at is not None:
        body["settlement"] = {
            "released_micro": escrow.released_micro,
            "refunded_micro": escrow.refunded_micro,
            "fee_micro": escrow.fee_micro,
            "settled_at": clock.rfc3339(escrow.settled_at),
            "settled_by": escrow.settled_by,
        }
    return _set_only(body)


def _set_only(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that are set, at any depth: the deal package leaves out the others, and
    an event's escrow is the same object."""
    return {
        name: _set_only(value) if isinstance(value, dict) else value
        for name, value in fields.items()
        if value is not None
    }


def evaluates(escrow: Escrow | None, account_id: str) -> bool:
    return escrow is not None and escrow.evaluator_id == account_id


def _escrow_for(session: Session, deal_id: str, account_id: str | None) -> Escrow:
    """The escrow, for one of its parties or its evaluator (None: the operator); anyone
    else cannot tell it from a deal that does not exist."""
    escrow = find(session, deal_id)
    if escrow is None:
        raise NotFound("No such deal, or the deal has no escrow.")
    if account_id is not None and account_id not in (
        escrow.buyer_id,
        escrow.seller_id,
        escrow.evaluator_id,
    ):
        raise NotFound("No such deal, or the deal has no escrow.")
    return escrow


def _refuse_settled(escrow: Escrow) -> None:
    if escrow.status not in OPEN:
        raise EscrowSettled(f"This deal's escrow has already settled ({escrow.status}).")


def _moved_or_refuse(session: Session, deal_id: str, moved: Escrow | None) -> Escrow:
    """The escrow as a conditional move left it; when another step moved it first, the
    refusal that says what it is now."""
    if moved is None:
        escrow = find(session, deal_id)
        _refuse_settled(escrow)
        raise EscrowOutOfTurn(f"The escrow is {escrow.status} now; read the deal again.")
    return moved


def _tell(
    session: Session, escrow: Escrow, event: str, *, evaluator_too: bool, now: datetime
) -> None:
    data = {"deal_id": escrow.deal_id, "escrow": view(escrow)}
    parties = (escrow.seller_id, escrow.buyer_id)
    webhooks.enqueue_for_both(session, parties, event, escrow.deal_id, data, now=now)
    if evaluator_too and escrow.evaluator_id:
        webhooks.enqueue(session, escrow.evaluator_id, event, escrow.deal_id, data, now=now)


def _settle(
    session: Session,
    escrow: Escrow,
    *,
    expected: str,
    outcome: str,
    seller_share_bps: int,
    settled_by: str,
    now: datetime,
    **values: Any,
) -> Escrow:
    """Settle the escrow from `expected`: pay it out through the ledger, count it on the
    seller's record, tell both parties. Refused (409) if another step settled it first."""
    status = OUTCOME_STATUS[outcome]
    plan = money.plan(
        escrow.amount_micro, seller_share_bps=seller_share_bps, fee_bps=escrow.fee_bps
    )
    moved = repository.settle(
        session,
        escrow.deal_id,
        expected=expected,
        status=status,
        released_micro=plan.released_micro,
        refunded_micro=plan.refunded_micro,
        fee_micro=plan.fee_micro,
        settled_at=now,
        settled_by=settled_by,
        **values,
    )
    settled = _moved_or_refuse(session, escrow.deal_id, moved)
    money.settle(
        session,
        plan,
        deal_id=settled.deal_id,
        outcome=status,
        seller_id=settled.seller_id,
        buyer_id=settled.buyer_id,
        now=now,
    )
    if settled.counts_for_reputation:
        on_time = settled.delivered_at is not None and settled.delivered_at <= settled.deliver_by
        reputation.record_escrow(
            session, seller_id=settled.seller_id, outcome=status, on_time=on_time
        )
    if EVENTS[status]:
        _tell(session, settled, EVENTS[status], evaluator_too=False, now=now)
    return settled


def deliver(
    session: Session,
    account_id: str,
    deal_id: str,
    *,
    note: str | None,
    evidence_sha256: str | None,
    now: datetime,
) -> Escrow:
    """The seller says the work is delivered; the buyer's acceptance clock starts."""
    escrow = _escrow_for(session, deal_id, account_id)
    if account_id != escrow.seller_id:
        raise Forbidden("Only the deal's seller may deliver.")
    _refuse_settled(escrow)
    if escrow.status != "held":
        raise EscrowOutOfTurn("This deal's work was delivered already.")
    if now > escrow.deliver_by:
        raise EscrowOutOfTurn("The delivery deadline has passed; the escrow is refunded.")
    moved = repository.deliver(
        session,
        deal_id,
        delivered_at=now,
        accept_by=now + timedelta(hours=escrow.acceptance_hours),
        delivery_note=note,
        evidence_sha256=evidence_sha256,
    )
    delivered = _moved_or_refuse(session, deal_id, moved)
    _tell(session, delivered, "deal.delivered", evaluator_too=False, now=now)
    return delivered


def accept(session: Session, account_id: str, deal_id: str, *, now: datetime) -> Escrow:
    """The buyer accepts the delivery: the seller is paid the price less the fee."""
    escrow = _escrow_for(session, deal_id, account_id)
    if account_id != escrow.buyer_id:
        raise Forbidden("Only the deal's buyer may accept the delivery.")
    _refuse_settled(escrow)
    if escrow.status != "delivered":
        raise EscrowOutOfTurn(f"Nothing to accept: the escrow is {escrow.status}.")
    return _settle(
        session,
        escrow,
        expected="delivered",
        outcome="release",
        seller_share_bps=FULL,
        settled_by="accepted",
        now=now,
    )


def reject(
    session: Session, account_id: str, deal_id: str, *, reason: str, now: datetime
) -> Escrow:
    """The buyer rejects the delivery; the escrow waits for the evaluator's ruling."""
    escrow = _escrow_for(session, deal_id, account_id)
    if account_id != escrow.buyer_id:
        raise Forbidden("Only the deal's buyer may reject the delivery.")
    _refuse_settled(escrow)
    if escrow.status != "delivered":
        raise EscrowOutOfTurn(f"Nothing to reject: the escrow is {escrow.status}.")
    if escrow.accept_by is not None and now > escrow.accept_by:
        raise EscrowOutOfTurn("The acceptance deadline has passed; the escrow is released.")
    if not reason.strip():
        raise InvalidInput("reason must not be empty.")
    moved = repository.reject(session, deal_id, rejected_at=now, rejection_reason=reason)
    rejected = _moved_or_refuse(session, deal_id, moved)
    _tell(session, rejected, "deal.rejected", evaluator_too=True, now=now)
    return rejected


def rule(
    session: Session,
    evaluator_id: str | None,
    deal_id: str,
    *,
    outcome: str,
    seller_share_bps: int | None,
    reason: str,
    signer: Signer,
    now: datetime,
) -> Escrow:
    """The evaluator (None: the operator, where no account evaluates) rules on a rejected
    delivery: release, refund, or split with the seller's share in basis points."""
    escrow = _escrow_for(session, deal_id, evaluator_id)
    if evaluator_id is None and escrow.evaluator_id is not None:
        raise Forbidden("This deal names an evaluator account; only it may rule.")
    if evaluator_id is not None and evaluator_id != escrow.evaluator_id:
        raise Forbidden("Only the deal's evaluator may rule.")
    share = _share(outcome, seller_share_bps)
    if not reason.strip():
        raise InvalidInput("reason must not be empty.")
    _refuse_settled(escrow)
    if escrow.status != "rejected":
        raise EscrowOutOfTurn(f"Nothing to rule on: the escrow is {escrow.status}.")
    token = mint_ruling(
        signer,
        deal_id=deal_id,
        outcome=outcome,
        seller_share_bps=share,
        reason=reason,
        evaluator=escrow.evaluator_handle,
        now=now,
    )
    ruled = _settle(
        session,
        escrow,
        expected="rejected",
        outcome=outcome,
        seller_share_bps=share,
        settled_by="ruled" if evaluator_id else "operator",
        now=now,
        ruling_outcome=outcome,
        ruling_seller_share_bps=share,
        ruling_reason=reason,
        ruling_token=token,
        ruled_at=now,
    )
    _tell(session, ruled, "deal.ruled", evaluator_too=True, now=now)
    return ruled


def _share(outcome: str, seller_share_bps: int | None) -> int:
    if outcome == "split":
        if seller_share_bps is None or not 0 <= seller_share_bps <= FULL:
            raise InvalidInput("A split names seller_share_bps, 0 to 10000.")
        return seller_share_bps
    if outcome not in SHARES:
        raise InvalidInput("outcome must be release, refund or split.")
    if seller_share_bps is not None and seller_share_bps != SHARES[outcome]:
        raise InvalidInput(f"seller_share_bps is only for a split ({outcome} is fixed).")
    return SHARES[outcome]


# --- Deadlines: the escrow-deadlines job ----------------------------------------------


def settle_due(session: Session, *, now: datetime, limit: int = 200) -> list[Escrow]:
    """Refund escrows not delivered by deliver_by; release those delivered and neither
    accepted nor rejected by accept_by. A rejected escrow waits for its ruling. Each is
    settled by its own conditional move, so a party's step racing the job wins or loses
    as a whole."""
    settled = []
    for escrow in repository.due(session, now=now, limit=limit):
        outcome = "refund" if escrow.status == "held" else "release"
        try:
            with session.begin_nested():
                moved = _settle(
                    session,
                    escrow,
                    expected=escrow.status,
                    outcome=outcome,
                    seller_share_bps=SHARES[outcome],
                    settled_by="deadline",
                    now=now,
                )
        except (EscrowOutOfTurn, EscrowSettled):
            continue  # a party's step got there first
        settled.append(moved)
    return settled
