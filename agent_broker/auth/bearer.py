"""Bearer identities: a dashboard session or an agent's OAuth access token, verified before
the request's database session opens (verifying may fetch the issuer's keys), and the
link between such an identity and an account, made by a call that carries the token
together with the account's valid API key."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import identities
from agent_broker.auth.keys import active_account
from agent_broker.db.dispatch import run
from agent_broker.db.session import transaction
from agent_broker.http.context import context_of
from agent_broker.http.jwt_bearer import InvalidToken
from agent_broker.http.policy import CredentialKind, bearer_token, presented_key
from agent_broker.problems import Unauthorized


@dataclass(frozen=True)
class Identity:
    """Who a verified bearer token names, and what it may do."""

    issuer: str
    subject: str
    via: CredentialKind = CredentialKind.session
    # An OAuth token's scopes (None: a session, every scope) and its (issuer, jti, exp).
    scopes: frozenset[str] | None = None
    token: tuple[str, str, int] | None = None


async def session_identity(request: Request) -> Identity | None:
    """The identity of a dashboard session, verified before any database session opens (it
    may fetch the issuer's keys). A session presented with the account's API key links
    the two if the identity reaches no account yet."""
    return await _bearer_identity(request, CredentialKind.session)


async def oauth_identity(request: Request) -> Identity | None:
    """The identity and scopes of an agent OAuth access token, verified like a session."""
    return await _bearer_identity(request, CredentialKind.oauth)


_NAMES = {
    CredentialKind.session: ("Identity-provider sessions", "session"),
    CredentialKind.oauth: ("Agent OAuth tokens", "OAuth token"),
}


async def _bearer_identity(request: Request, kind: CredentialKind) -> Identity | None:
    bearer = bearer_token(request)
    if bearer is None:
        return None
    plural, singular = _NAMES[kind]
    context = context_of(request)
    verifier = (
        context.session_verifier if kind is CredentialKind.session else context.oauth_verifier
    )
    if verifier is None:
        raise Unauthorized(f"{plural} are not enabled on this deployment.")
    try:
        token = await verifier.verify(bearer)
    except InvalidToken as exc:
        raise Unauthorized(f"The {singular} is not valid: {exc}.") from None
    identity = Identity(issuer=token.issuer, subject=token.subject, via=kind)
    if kind is CredentialKind.oauth:
        scope, jti = token.claims.get("scope"), token.claims.get("jti")
        if not isinstance(jti, str) or not 0 < len(jti) <= 200:
            raise Unauthorized("The OAuth token's jti must be a string of 1 to 200 characters.")
        scopes = frozenset(scope.split()) if isinstance(scope, str) else frozenset()
        spent = (token.issuer, jti, int(token.claims["exp"]))
        identity = Identity(token.issuer, token.subject, kind, scopes, spent)
    presented = presented_key(request)
    if presented:
        await _link_once(request, identity, presented)
    return identity


async def _link_once(request: Request, identity: Identity, presented: str) -> None:
    db = context_of(request).db
    async with transaction(db, write=False) as session:
        linked = await run(
            session, identities.linked_account, session, identity.issuer, identity.subject
        )
    if linked is None:
        async with transaction(db, write=True) as session:
            await run(session, _link, request, session, identity, presented)


def _link(request: Request, session: Session, identity: Identity, presented: str) -> None:
    settings = context_of(request).settings
    # A disabled account's key proves nothing, not even to link.
    account = active_account(session, settings, presented)
    identities.link(
        session, identity.issuer, identity.subject, account.id, now=clock.now(), settings=settings
    )
