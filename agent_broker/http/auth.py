"""The one authentication seam. Each route declares its policy, which credential kinds it
accepts, the scopes it needs and whether it is metered (payable per call), and the seam
resolves the `Caller` from whatever credential the request carries. Routes never read
credential headers themselves.

API keys (x-api-key), dashboard sessions and agent OAuth tokens (bearer JWTs, verified in
agent_broker.http.identity before any database session opens) are the kinds resolved
today, and x402 payments on the metered routes when payments are on (settled before the
route's transaction opens, agent_broker.payments.x402). A policy that does not list a
kind refuses it, so a route opens to a new kind only by saying so."""

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from agent_broker.accounts import credentials, identities
from agent_broker.accounts.caller import Caller, CredentialKind
from agent_broker.db.dispatch import run
from agent_broker.db.session import request_transactions, transaction
from agent_broker.http.identity import (
    API_KEY_SCHEME,
    BEARER_SCHEME,
    Identity,
    oauth_identity,
    presented_key,
    session_identity,
)
from agent_broker.payments.x402.gate import challenge_problem, settled_payment
from agent_broker.payments.x402.service import Settlement
from agent_broker.problems import ApiKeyDisabled, Forbidden, IdentityConflict, Unauthorized

__all__ = ["AuthPolicy", "Caller", "CredentialKind", "authenticated"]

KEY = frozenset({CredentialKind.api_key})
KEY_OR_SESSION = frozenset({CredentialKind.api_key, CredentialKind.session})
KEY_OR_OAUTH = frozenset({CredentialKind.api_key, CredentialKind.oauth})


@dataclass(frozen=True)
class AuthPolicy:
    """What a route accepts. `writes` picks the request's session: a writing route's
    caller is loaded in the write transaction the route then uses."""

    kinds: frozenset[CredentialKind] = KEY
    scopes: frozenset[str] = frozenset({"read"})
    # Payable per call (the x402 operations): with payments on, a request carrying no
    # credential at all is answered with a payment challenge instead of 401.
    metered: bool = False
    writes: bool = False
    # The caller is read in a short transaction of its own, closed before the route runs:
    # for routes that make a network call and open their own transactions around it.
    detached: bool = False


def _resolve(
    request: Request,
    session: Session,
    presented: str | None,
    policy: AuthPolicy,
    identity: Identity | None = None,
    paid: Settlement | None = None,
) -> Caller:
    if paid is not None:
        return _by_payment(session, paid)
    if identity is not None:
        caller = _by_identity(request, session, presented, identity)
    else:
        caller = _by_key(request, session, presented, policy)
    missing = sorted(scope for scope in policy.scopes if not caller.has_scope(scope))
    if missing:
        raise Forbidden(f"This credential lacks the scope(s) needed here: {', '.join(missing)}.")
    return caller


def _by_key(
    request: Request, session: Session, presented: str | None, policy: AuthPolicy
) -> Caller:
    if not presented:
        if policy.metered and request.app.state.x402 and "authorization" not in request.headers:
            # No credential at all reached a payable route: offer to be paid instead.
            raise challenge_problem(request)
        raise Unauthorized()
    if CredentialKind.api_key not in policy.kinds:
        raise Unauthorized("An API key is not accepted on this route.")
    account = credentials.account_for_key(session, request.app.state.settings, presented)
    if account is None:
        raise Unauthorized("The API key is not recognised.")
    if account.status != "active":
        raise ApiKeyDisabled()
    return Caller(account=account, via=CredentialKind.api_key)


def _by_identity(
    request: Request, session: Session, presented: str | None, identity: Identity
) -> Caller:
    """A bearer token acts for the account its identity is linked to. A session does so
    whether the account is disabled or not (its operator rotates the key through one);
    an agent's OAuth token is refused like the account's key."""
    account_id = identities.linked_account(session, identity.issuer, identity.subject)
    if account_id is None:
        raise Unauthorized(
            "This identity is not linked to an account yet: make one call carrying both "
            "the session and the account's x-api-key."
        )
    if presented:
        keyed = credentials.account_for_key(session, request.app.state.settings, presented)
        if keyed is None:
            raise Unauthorized("The API key is not recognised.")
        if keyed.status != "active":
            raise ApiKeyDisabled()
        if keyed.id != account_id:
            raise IdentityConflict(
                "This session's identity is linked to another account than this API key's."
            )
    account = credentials.account_by_id(session, account_id)
    if account is None:
        raise Unauthorized("The account this identity is linked to no longer exists.")
    if identity.via is CredentialKind.oauth and account.status != "active":
        raise ApiKeyDisabled("This account is disabled; its OAuth tokens are refused too.")
    return Caller(
        account=account,
        via=identity.via,
        scopes=identity.scopes,
        token=identity.token,
        identity=(identity.issuer, identity.subject),
    )


def _by_payment(session: Session, paid: Settlement) -> Caller:
    """The account a settled x402 payment credited (opened for it, for a new wallet)."""
    account = credentials.account_by_id(session, paid.account_id)
    if account is None:
        raise Unauthorized("The account this payment credited no longer exists.")
    if account.status != "active":
        raise ApiKeyDisabled()
    return Caller(account=account, via=CredentialKind.x402)


Bearer = Callable[[Request], Awaitable[Identity | None]]


def _bearer_of(policy: AuthPolicy) -> Bearer | None:
    """The bearer token a policy accepts: a session or an agent's OAuth token (no route
    takes both), or None: the route ignores the Authorization header."""
    if CredentialKind.session in policy.kinds:
        return session_identity
    if CredentialKind.oauth in policy.kinds:
        return oauth_identity
    return None


def security_of(policy: AuthPolicy) -> tuple[str, ...]:
    """The credentials /openapi.json lists for a route with this policy, in its order."""
    if _bearer_of(policy) is not None:
        return (BEARER_SCHEME, API_KEY_SCHEME)
    return (API_KEY_SCHEME,)


def _dependency(policy: AuthPolicy) -> Any:
    """One dependency, the request its only parameter: each dependency FastAPI solves per
    request costs more than reading a header, so the credentials are read here."""
    bearer = _bearer_of(policy)
    if policy.metered and policy.detached:
        raise ValueError("a payable route cannot be detached (a payment settles before it)")

    async def resolve_caller(request: Request) -> Caller:
        # The identity and the payment come first: they may call out to the network (key
        # sets, the facilitator), which happens with no database session open.
        identity = await bearer(request) if bearer is not None else None
        paid = await settled_payment(request) if policy.metered else None
        presented = presented_key(request)
        if policy.detached:
            # A short transaction of its own, closed before the route runs.
            async with transaction(request.app.state.db, write=False) as session:
                return await run(
                    session, _resolve, request, session, presented, policy, identity, paid
                )
        # The request's own session, which the route's ReadSession/WriteSession then gets.
        session = await request_transactions(request).session(write=policy.writes)
        return await run(session, _resolve, request, session, presented, policy, identity, paid)

    resolve_caller.policy = policy  # type: ignore[attr-defined]
    # BrokerRoute ends the request's session for a route whose caller opened it.
    resolve_caller.opens_request_session = not policy.detached  # type: ignore[attr-defined]
    return resolve_caller


def authenticated(
    *,
    kinds: frozenset[CredentialKind] = KEY,
    scopes: frozenset[str] = frozenset({"read"}),
    metered: bool = False,
    writes: bool = False,
    detached: bool = False,
) -> Any:
    """A route's declaration: `caller: Annotated[Caller, authenticated(...)]`."""
    policy = AuthPolicy(
        kinds=kinds, scopes=scopes, metered=metered, writes=writes, detached=detached
    )
    return Depends(_dependency(policy))


def policy_of(route: Any) -> AuthPolicy | None:
    """The policy a route declared (for the OpenAPI document and the tests)."""
    dependant = getattr(route, "dependant", None)
    for dependency in dependant.dependencies if dependant else ():
        policy = getattr(dependency.call, "policy", None)
        if isinstance(policy, AuthPolicy):
            return policy
    return None


def security_requirements(routes: Iterable[Any]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(path, method) -> the credentials /openapi.json lists, for every declared route."""
    requirements: dict[tuple[str, str], tuple[str, ...]] = {}
    for route in routes:
        policy = policy_of(route)
        if policy is None or not getattr(route, "include_in_schema", False):
            continue
        for method in route.methods:
            requirements[(route.path, method.lower())] = security_of(policy)
    return requirements
