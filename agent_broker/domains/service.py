"""Domain proof: which registrable domains an account has proved it controls."""

from __future__ import annotations

from sqlalchemy import bindparam, exists, select
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared
from agent_broker.domains.models import DomainClaim

_HAS_CLAIM = Prepared(
    select(exists().where(DomainClaim.account_id == bindparam("account_id")).label("claimed"))
)


def has_verified_domain(session: Session, account_id: str) -> bool:
    return bool(_HAS_CLAIM.scalar(session, account_id=account_id))


def verified_accounts(session: Session, account_ids: set[str]) -> set[str]:
    """Which of these accounts proved a domain (one query)."""
    if not account_ids:
        return set()
    if len(account_ids) == 1:
        (only,) = account_ids
        return {only} if has_verified_domain(session, only) else set()
    rows = session.scalars(
        select(DomainClaim.account_id).where(DomainClaim.account_id.in_(account_ids)).distinct()
    )
    return set(rows)
