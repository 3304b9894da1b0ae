"""Ratings and disputes: once per party per deal, within 7 days of sealing. A dispute only
records a claim; nothing moves and nothing is adjudicated."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agent_broker.deals.errors import DealPurged
from agent_broker.deals.models import Deal, Dispute, Rating
from agent_broker.escrow import service as escrow
from agent_broker.escrow.errors import EscrowOutOfTurn
from agent_broker.problems import Forbidden, NotFound, Problem, Reason
from agent_broker.reputation import service as reputation
from agent_broker.webhooks import service as webhooks

FEEDBACK_WINDOW = timedelta(days=7)


class DuplicateRating(Problem):
    status, reason = 409, Reason.duplicate_rating
    default_detail = "You already rated this deal; a rating is final."


class DuplicateDispute(Problem):
    status, reason = 409, Reason.duplicate_dispute
    default_detail = "You already filed a dispute on this deal."


def _open_deal(session: Session, account_id: str, deal_id: str, now: datetime) -> Deal:
    deal = session.get(Deal, deal_id)
    if deal is None:
        raise NotFound("No such deal.")
    if account_id not in (deal.poster_id, deal.negotiator_id):
        raise Forbidden("Only the two parties of a deal may rate it or dispute it.")
    opened = deal.created_at
    held = escrow.find(session, deal.id) if deal.settlement == "escrow" else None
    if held is not None:
        # An escrow deal is rated on its outcome: from its settlement, for the same window.
        if escrow.is_open(held):
            raise EscrowOutOfTurn(
                "Ratings and disputes on an escrow deal open once its escrow settles."
            )
        opened = held.settled_at or opened
    if now >= opened + FEEDBACK_WINDOW or deal.status == "purged":
        raise DealPurged("The 7-day window for ratings and disputes on this deal has closed.")
    return deal


def _record_once(session: Session, row: Rating | Dispute, duplicate: Problem) -> None:
    """Insert a party's one rating or dispute; the unique index refuses a second."""
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        raise duplicate from None


def _other_side(deal: Deal, account_id: str) -> tuple[str, str]:
    """The counterparty's id and the role they played in the deal."""
    negotiator_role = "buyer" if deal.poster_role == "seller" else "seller"
    if account_id == deal.poster_id:
        return deal.negotiator_id, negotiator_role
    return deal.poster_id, deal.poster_role


def rate(
    session: Session,
    account_id: str,
    deal_id: str,
    *,
    score: int,
    delivered: bool | None,
    now: datetime,
) -> None:
    deal = _open_deal(session, account_id, deal_id, now)
    ratee, role = _other_side(deal, account_id)
    _record_once(
        session,
        Rating(
            id=str(uuid.uuid4()),
            deal_id=deal.id,
            rater_id=account_id,
            ratee_id=ratee,
            ratee_role=role,
            score=score,
            delivered=delivered,
            created_at=now,
        ),
        DuplicateRating(),
    )
    webhooks.enqueue(
        session,
        ratee,
        "deal.rated",
        deal.id,
        {"deal_id": deal.id, "score": score, "delivered": delivered},
        now=now,
    )
    if deal.counts_for_reputation:
        reputation.record_rating(
            session,
            ratee_id=ratee,
            role=role,
            score=score,
            delivered=delivered,
            revealed_at=deal.reveal_at,
            now=now,
        )


def dispute(session: Session, account_id: str, deal_id: str, *, now: datetime) -> None:
    deal = _open_deal(session, account_id, deal_id, now)
    against, _ = _other_side(deal, account_id)
    _record_once(
        session,
        Dispute(
            id=str(uuid.uuid4()),
            deal_id=deal.id,
            filer_id=account_id,
            against_id=against,
            counts_for_reputation=deal.counts_for_reputation,
            created_at=now,
        ),
        DuplicateDispute(),
    )
    webhooks.enqueue(session, against, "deal.disputed", deal.id, {"deal_id": deal.id}, now=now)
    if deal.counts_for_reputation:
        reputation.record_dispute(session, against_id=against)
