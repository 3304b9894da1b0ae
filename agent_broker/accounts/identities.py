"""Which account an identity-provider subject reaches (dashboard sessions). A link is made
by the first call that carries both a valid session and the account's valid API key, or
by an operator (`agent-broker admin link-identity`); it is never moved silently."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import IdentityLink, SpentToken
from agent_broker.db.prepared import Prepared, inserting_unless_taken
from agent_broker.problems import Problem, Reason

_links = IdentityLink.__table__
_LINKED = Prepared(
    select(_links.c.account_id).where(
        _links.c.issuer == bindparam("issuer"), _links.c.subject == bindparam("subject")
    )
)
_LINK = inserting_unless_taken(_links)


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
        linked_at=now,
    )
    linked = linked_account(session, issuer, subject)
    assert linked is not None
    return linked


_spent = SpentToken.__table__
_SPEND = inserting_unless_taken(_spent, returning=_spent.c.id)


class OAuthTokenReplay(Problem):
    status, reason = 409, Reason.oauth_token_replay
    default_detail = "This OAuth token was already used for this operation; get a new one."


# Longer than any verifier's leeway: a token is refused as expired before its row goes.
KEEP_AFTER_EXPIRY = timedelta(minutes=10)
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z: a later exp is kept until then
_FORGET = Prepared(delete(_spent).where(_spent.c.expires_at < bindparam("before")))


def spend(session: Session, token: tuple[str, str, int], *, now: datetime) -> None:
    """Use an OAuth token (issuer, jti, exp) for an operation it may do once, in the
    operation's own transaction, so a refused operation leaves the token unspent."""
    issuer, jti, exp = token
    expires_at = datetime.fromtimestamp(min(max(exp, 0), LAST_SECOND), UTC)
    spent = _SPEND.one_or_none(
        session, id=str(uuid.uuid4()), issuer=issuer, jti=jti, spent_at=now, expires_at=expires_at
    )
    if spent is None:
        raise OAuthTokenReplay()


def forget_expired_tokens(session: Session, *, now: datetime) -> int:
    """Spent tokens past their expiry cannot be presented again: forget them."""
    return _FORGET.execute(session, before=now - KEEP_AFTER_EXPIRY)
