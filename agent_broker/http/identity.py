"""Bearer identities: a dashboard session or an agent's OAuth access token, verified before
the request's database session opens (verifying may fetch the issuer's keys), and the
link between such an identity and an account, made by a call that carries the token
together with the account's valid API key."""

from dataclasses import dataclass

from fastapi import Request
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import credentials, identities
from agent_broker.accounts.caller import CredentialKind
from agent_broker.db.dispatch import run
from agent_broker.db.session import transaction
from agent_broker.http.fastapi_internals import get_authorization_scheme_param
from agent_broker.http.jwt_bearer import InvalidToken
from agent_broker.problems import ApiKeyDisabled, Unauthorized

API_KEY_HEADER = "x-api-key"
# How /openapi.json names the two credentials a route may take (agent_broker.http.auth
# declares, per route, which ones; agent_broker.http.responses writes them out).
API_KEY_SCHEME = "APIKeyHeader"
BEARER_SCHEME = "HTTPBearer"
SECURITY_SCHEMES = {
    API_KEY_SCHEME: {"type": "apiKey", "in": "header", "name": API_KEY_HEADER},
    BEARER_SCHEME: {
        "type": "http",
        "scheme": "bearer",
        "description": (
            "Identity-provider session or agent OAuth token (JWT), where a route takes one"
        ),
    },
}


def presented_key(request: Request) -> str | None:
    """The API key the request carries, if any (read straight from the header: a
    dependency per credential costs FastAPI more than the whole check)."""
    return request.headers.get(API_KEY_HEADER) or None


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for no header or
    another scheme (the route then treats the request as carrying no bearer token)."""
    scheme, credentials = get_authorization_scheme_param(request.headers.get("authorization"))
    if not credentials or scheme.lower() != "bearer":
        return None
    return credentials


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


_VERIFIERS = {
    CredentialKind.session: ("session_verifier", "Identity-provider sessions", "session"),
    CredentialKind.oauth: ("oauth_verifier", "Agent OAuth tokens", "OAuth token"),
}


async def _bearer_identity(request: Request, kind: CredentialKind) -> Identity | None:
    bearer = bearer_token(request)
    if bearer is None:
        return None
    attribute, plural, singular = _VERIFIERS[kind]
    verifier = getattr(request.app.state, attribute)
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
    db = request.app.state.db
    async with transaction(db, write=False) as session:
        linked = await run(
            session, identities.linked_account, session, identity.issuer, identity.subject
        )
    if linked is None:
        async with transaction(db, write=True) as session:
            await run(session, _link, request, session, identity, presented)


def _link(request: Request, session: Session, identity: Identity, presented: str) -> None:
    settings = request.app.state.settings
    account = credentials.account_for_key(session, settings, presented)
    if account is None:
        raise Unauthorized("The API key is not recognised.")
    if account.status != "active":
        raise ApiKeyDisabled()  # a disabled key proves nothing, not even to link
    identities.link(
        session, identity.issuer, identity.subject, account.id, now=clock.now(), settings=settings
    )
