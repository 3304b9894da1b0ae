"""Which account an identity-provider subject reaches (dashboard sessions). A link is made
by the first call that carries both a valid session and the account's valid API key, or
by an operator (`agent-broker admin link-identity`); it is never moved silently."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import IdentityLink
from agent_broker.db.prepared import Prepared, dialect_insert

_links = IdentityLink.__table__
_LINKED = Prepared(
    select(_links.c.account_id).where(
        _links.c.issuer == bindparam("issuer"), _links.c.subject == bindparam("subject")
    )
)
_LINK = Prepared(
    lambda dialect: (
        dialect_insert(dialect, _links)
        .values(
            id=bindparam("id"),
            issuer=bindparam("issuer"),
            subject=bindparam("subject"),
            account_id=bindparam("account_id"),
            linked_at=bindparam("now"),
        )
        .on_conflict_do_nothing()
    )
)


def linked_account(session: Session, issuer: str, subject: str) -> str | None:
    return _LINKED.scalar(session, issuer=issuer, subject=subject)


def link(session: Session, issuer: str, subject: str, account_id: str, *, now: datetime) -> str:
    """Link the identity to the account unless it is linked already; returns the account
    the identity reaches afterwards (an earlier link wins)."""
    _LINK.execute(
        session,
        id=str(uuid.uuid4()),
        issuer=issuer,
        subject=subject,
        account_id=account_id,
        now=now,
    )
    linked = linked_account(session, issuer, subject)
    assert linked is not None
    return linked
