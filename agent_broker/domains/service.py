"""Domain proof: which registrable domains an account has proved it controls."""

from __future__ import annotations

from sqlalchemy import bindparam, exists, select
from sqlalchemy.orm import Session

from agent_broker.domains.models import DomainClaim

_HAS_CLAIM = select(exists().where(DomainClaim.account_id == bindparam("account_id")))


def has_verified_domain(session: Session, account_id: str) -> bool:
    return bool(session.scalar(_HAS_CLAIM, {"account_id": account_id}))
