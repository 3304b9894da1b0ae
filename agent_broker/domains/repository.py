"""The domain statements: claims, the grant row paid at most once, and the daily cap's
counter, prepared (agent_broker.db.prepared)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, inserting_unless_taken
from agent_broker.domains.models import DomainClaim, DomainGrant, DomainGrantDay

_claims = DomainClaim.__table__
_grants = DomainGrant.__table__
_days = DomainGrantDay.__table__

_HAS_CLAIM = Prepared(
    select(exists().where(_claims.c.account_id == bindparam("account_id")).label("claimed"))
)
_HAS_CLAIM_ON = Prepared(
    select(
        exists()
        .where(_claims.c.account_id == bindparam("account_id"))
        .where(_claims.c.domain == bindparam("domain"))
        .label("claimed")
    )
)
_CLAIM = inserting_unless_taken(_claims)
# Inserts nothing when the account or the domain already has a grant row.
_OWE_GRANT = inserting_unless_taken(_grants)
_GRANT_OF = Prepared(
    select(_grants.c.id, _grants.c.domain, _grants.c.status, _grants.c.amount_micro).where(
        _grants.c.account_id == bindparam("account_id")
    )
)
_START_PAYING = Prepared(
    update(_grants)
    .where(_grants.c.account_id == bindparam("account_id"), _grants.c.status == "pending")
    .values(status="paid", amount_micro=bindparam("amount"), paid_at=bindparam("now"))
    .returning(_grants.c.id, _grants.c.domain)
)
_STILL_PENDING = Prepared(
    update(_grants)
    .where(_grants.c.id == bindparam("id"))
    .values(status="pending", amount_micro=0, paid_at=None)
)
_OPEN_DAY = inserting_unless_taken(_days)
_COUNT_PAID = Prepared(
    update(_days)
    .where(_days.c.day == bindparam("day"), _days.c.paid < bindparam("cap"))
    .values(paid=_days.c.paid + 1)
    .returning(_days.c.paid)
)


def has_claim(session: Session, account_id: str) -> bool:
    """Whether the account claimed any domain."""
    return bool(_HAS_CLAIM.scalar(session, account_id=account_id))


def has_claim_on(session: Session, account_id: str, domain: str) -> bool:
    return bool(_HAS_CLAIM_ON.scalar(session, account_id=account_id, domain=domain))


def insert_claim(
    session: Session, *, claim_id: str, account_id: str, domain: str, verified_at: datetime
) -> None:
    """Keep the claim, unless the account already holds one on the domain."""
    _CLAIM.execute(
        session, id=claim_id, account_id=account_id, domain=domain, verified_at=verified_at
    )


def insert_pending_grant(
    session: Session, *, grant_id: str, account_id: str, domain: str, claimed_at: datetime
) -> None:
    """Owe the account a grant, unless it or the domain ever had a grant row."""
    _OWE_GRANT.execute(
        session,
        id=grant_id,
        account_id=account_id,
        domain=domain,
        status="pending",
        claimed_at=claimed_at,
        amount_micro=0,
        paid_at=None,
    )


def grant_of(session: Session, account_id: str) -> Any:
    """The account's grant row (id, domain, status, amount_micro), or None."""
    return _GRANT_OF.one_or_none(session, account_id=account_id)


def start_paying(session: Session, account_id: str, *, amount: int, now: datetime) -> Any:
    """Move the account's pending grant to paid; its (id, domain), or None when no grant
    is pending."""
    return _START_PAYING.one_or_none(session, account_id=account_id, amount=amount, now=now)


def keep_pending(session: Session, grant_id: str) -> None:
    """Put a grant whose payment the cap held back to pending again."""
    _STILL_PENDING.execute(session, id=grant_id)


def open_day(session: Session, day: str) -> None:
    """The day's counter of paid grants, at 0 unless it exists."""
    _OPEN_DAY.execute(session, day=day, paid=0)


def count_paid_under_cap(session: Session, day: str, cap: int) -> bool:
    """Count one more grant paid on the day if fewer than `cap` were; whether it counted."""
    return _COUNT_PAID.one_or_none(session, day=day, cap=cap) is not None
