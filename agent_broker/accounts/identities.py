"""Which account an identity reaches: a dashboard session's or an agent OAuth token's
(issuer, subject), or an x402 wallet's. A session or token link is made by the first call
that carries both a valid token and the account's valid API key, or by an operator
(`agent-broker admin link-identity`); a wallet link by the wallet's first payment. A link
is never moved silently. Each new one is announced to its account (the
`account.identity_linked` event), whose holder lists and removes them
(`/dashboard/identities`); a key rotation removes the session and OAuth links, so a
leaked key's holder keeps no way in once the key is replaced."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import repository
from agent_broker.config import Settings
from agent_broker.problems import NotFound, Problem, Reason
from agent_broker.webhooks import service as webhooks

IDENTITY_LINKED = "account.identity_linked"
# The issuer x402 payments link wallets under. Wallets are identities like an identity
# provider's subjects: one EVM address is the same key holder on every chain, so the
# link does not name one.
WALLET_ISSUER = "x402:evm"
Kind = Literal["session", "oauth", "wallet"]


def kind_of(settings: Settings | None, issuer: str) -> Kind:
    """What a link is, told by its issuer: an x402 wallet; an agent OAuth token (the
    configured OAuth issuer, unless the identity provider is the same issuer); otherwise a
    dashboard session: the identity provider's links, and those of an issuer no setting
    names (the operator's `admin link-identity` links identity-provider subjects, and a
    provider replaced since leaves its links behind)."""
    if issuer == WALLET_ISSUER:
        return "wallet"
    if settings is not None and issuer == settings.oauth_issuer != settings.idp_issuer:
        return "oauth"
    return "session"


def view(
    settings: Settings | None, link_id: str, issuer: str, subject: str, linked_at: datetime
) -> dict[str, Any]:
    return {
        "id": link_id,
        "kind": kind_of(settings, issuer),
        "issuer": issuer,
        "subject": subject,
        "linked_at": clock.rfc3339(linked_at),
    }


def linked_account(session: Session, issuer: str, subject: str) -> str | None:
    return repository.linked_account(session, issuer, subject)


def link(
    session: Session,
    issuer: str,
    subject: str,
    account_id: str,
    *,
    now: datetime,
    settings: Settings | None = None,
) -> str:
    """Link the identity to the account unless it is linked already; returns the account
    the identity reaches afterwards (an earlier link wins). A new link is announced to the
    account in the same transaction; `settings` tells a session's issuer from an OAuth
    token's for the event (kind_of), which a wallet's link does without."""
    link_id = str(uuid.uuid4())
    made = repository.insert_link(
        session,
        link_id=link_id,
        issuer=issuer,
        subject=subject,
        account_id=account_id,
        linked_at=now,
    )
    if made:
        data = view(settings, link_id, issuer, subject, now)
        # The account's id as the subject: its identity events reach it in order.
        webhooks.enqueue(session, account_id, IDENTITY_LINKED, account_id, data, now=now)
        return account_id
    linked = linked_account(session, issuer, subject)
    assert linked is not None
    return linked


def links_of(session: Session, settings: Settings, account_id: str) -> list[dict[str, Any]]:
    """The account's links, oldest first."""
    return [
        view(settings, row.id, row.issuer, row.subject, row.linked_at)
        for row in repository.links_of_account(session, account_id)
    ]


def unlink(session: Session, account_id: str, link_id: str) -> None:
    """Remove one of the account's own links; another account's is as unknown as none."""
    if not repository.delete_link(session, account_id, link_id):
        raise NotFound("This account has no identity link with that id.")


def revoke_bearer_links(
    session: Session, account_id: str, *, keep: tuple[str, str] | None = None
) -> int:
    """Remove the account's session and OAuth links, but `keep` (an (issuer, subject)),
    and never a wallet's: a wallet is how its payments reach the account, and how its
    holder recovers the key (payments/x402/wallet.py)."""
    return repository.delete_links_but(session, account_id, wallet_issuer=WALLET_ISSUER, keep=keep)


class OAuthTokenReplay(Problem):
    status, reason = 409, Reason.oauth_token_replay
    default_detail = "This OAuth token was already used for this operation; get a new one."


# Longer than any verifier's leeway: a token is refused as expired before its row goes.
KEEP_AFTER_EXPIRY = timedelta(minutes=10)
LAST_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z: a later exp is kept until then


def spend(session: Session, token: tuple[str, str, int], *, now: datetime) -> None:
    """Use an OAuth token (issuer, jti, exp) for an operation it may do once, in the
    operation's own transaction, so a refused operation leaves the token unspent."""
    issuer, jti, exp = token
    expires_at = datetime.fromtimestamp(min(max(exp, 0), LAST_SECOND), UTC)
    if not repository.spend_token(
        session, issuer=issuer, jti=jti, spent_at=now, expires_at=expires_at
    ):
        raise OAuthTokenReplay()


def forget_expired_tokens(session: Session, *, now: datetime) -> int:
    """Spent tokens past their expiry cannot be presented again: forget them."""
    return repository.forget_spent_tokens(session, before=now - KEEP_AFTER_EXPIRY)
