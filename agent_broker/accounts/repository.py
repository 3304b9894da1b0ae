"""The accounts feature's statements: account rows by key hash or id, creation times,
identity links and spent OAuth tokens. Prepared (agent_broker.db.prepared) where a
request runs them, starting with authentication."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from agent_broker.accounts.models import Account, AccountRecord, IdentityLink, SpentToken
from agent_broker.db.prepared import Prepared, inserting_unless_taken

# Accounts.

# Every authenticated request runs it: a prepared statement returning the row, not an
# entity (routes that change the account load the entity themselves).
_BY_KEY_HASH = Prepared(
    select(Account.__table__).where(Account.__table__.c.api_key_hash == bindparam("key_hash"))
)


_BY_ID = Prepared(
    select(Account.__table__).where(Account.__table__.c.id == bindparam("account_id"))
)
_CREATED = select(Account.id, Account.created_at).where(
    Account.id.in_(bindparam("ids", expanding=True))
)
_CREATED_OF_ONE = Prepared(
    select(Account.id, Account.created_at).where(Account.id == bindparam("id"))
)


def account_by_key_hash(session: Session, key_hash: str) -> AccountRecord | None:
    return _BY_KEY_HASH.one_or_none(session, key_hash=key_hash)


def account_by_id(session: Session, account_id: str) -> AccountRecord | None:
    return _BY_ID.one_or_none(session, account_id=account_id)


def created_at_of(session: Session, account_ids: list[str]) -> dict[str, datetime]:
    """The accounts' creation times (one query; one account's has its prepared form)."""
    if len(account_ids) == 1:
        row = _CREATED_OF_ONE.one_or_none(session, id=account_ids[0])
        return {} if row is None else {row.id: row.created_at}
    return {row.id: row.created_at for row in session.execute(_CREATED, {"ids": account_ids})}


# Identity links.

_links = IdentityLink.__table__
_LINKED = Prepared(
    select(_links.c.account_id).where(
        _links.c.issuer == bindparam("issuer"), _links.c.subject == bindparam("subject")
    )
)
_LINK = inserting_unless_taken(_links, returning=_links.c.id)
_OF_ACCOUNT = Prepared(
    select(_links.c.id, _links.c.issuer, _links.c.subject, _links.c.linked_at)
    .where(_links.c.account_id == bindparam("account_id"))
    .order_by(_links.c.linked_at, _links.c.id)
)
_UNLINK = Prepared(
    delete(_links).where(
        _links.c.id == bindparam("id"), _links.c.account_id == bindparam("account_id")
    )
)
# Every link of the account but its wallets' (and, after a rotation made with a session,
# that session's own).
_REVOKE = Prepared(
    delete(_links).where(
        _links.c.account_id == bindparam("account_id"),
        _links.c.issuer != bindparam("wallet_issuer"),
    )
)
_REVOKE_OTHERS = Prepared(
    delete(_links).where(
        _links.c.account_id == bindparam("account_id"),
        _links.c.issuer != bindparam("wallet_issuer"),
        (_links.c.issuer != bindparam("kept_issuer"))
        | (_links.c.subject != bindparam("kept_subject")),
    )
)


def linked_account(session: Session, issuer: str, subject: str) -> str | None:
    return _LINKED.scalar(session, issuer=issuer, subject=subject)


def insert_link(
    session: Session,
    *,
    link_id: str,
    issuer: str,
    subject: str,
    account_id: str,
    linked_at: datetime,
) -> bool:
    """Link the identity to the account unless it is linked already; whether it was not."""
    made = _LINK.one_or_none(
        session,
        id=link_id,
        issuer=issuer,
        subject=subject,
        account_id=account_id,
        linked_at=linked_at,
    )
    return made is not None


def links_of_account(session: Session, account_id: str) -> list[Any]:
    """The account's links (id, issuer, subject, linked_at), oldest first."""
    return _OF_ACCOUNT.all(session, account_id=account_id)


def delete_link(session: Session, account_id: str, link_id: str) -> bool:
    """Remove the account's link; whether it had one with that id."""
    return bool(_UNLINK.execute(session, id=link_id, account_id=account_id))


def delete_links_but(
    session: Session,
    account_id: str,
    *,
    wallet_issuer: str,
    keep: tuple[str, str] | None = None,
) -> int:
    """Remove the account's links but those of `wallet_issuer` and `keep` (an (issuer,
    subject)); how many went."""
    if keep is None:
        return _REVOKE.execute(session, account_id=account_id, wallet_issuer=wallet_issuer)
    return _REVOKE_OTHERS.execute(
        session,
        account_id=account_id,
        wallet_issuer=wallet_issuer,
        kept_issuer=keep[0],
        kept_subject=keep[1],
    )


# Spent OAuth tokens.

_spent = SpentToken.__table__
_SPEND = inserting_unless_taken(_spent, returning=_spent.c.id)
_FORGET = Prepared(delete(_spent).where(_spent.c.expires_at < bindparam("before")))


def spend_token(
    session: Session, *, issuer: str, jti: str, spent_at: datetime, expires_at: datetime
) -> bool:
    """Note the token (issuer, jti) spent; False when it was spent already."""
    spent = _SPEND.one_or_none(
        session,
        id=str(uuid.uuid4()),
        issuer=issuer,
        jti=jti,
        spent_at=spent_at,
        expires_at=expires_at,
    )
    return spent is not None


def forget_spent_tokens(session: Session, *, before: datetime) -> int:
    """Forget the spent tokens that expired before `before`; how many."""
    return _FORGET.execute(session, before=before)
