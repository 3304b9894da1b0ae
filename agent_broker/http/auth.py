"""The one authentication seam. Each route declares its policy, which credential kinds it
accepts, the scopes it needs and whether it is metered (payable per call), and the seam
resolves the `Caller` from whatever credential the request carries. Routes never read
credential headers themselves.

API keys (x-api-key) are the kind resolved today. Dashboard sessions, agent OAuth tokens
and x402 payments plug in here as further kinds; a policy that does not list a kind
refuses it, so a route opens to a new kind only by saying so."""

# No `from __future__ import annotations`: FastAPI must read the real annotations of the
# dependency built per policy below, which name a local (the policy's session).

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader
from sqlalchemy.orm import Session

from agent_broker.accounts import credentials
from agent_broker.accounts.caller import Caller, CredentialKind
from agent_broker.db.dispatch import db_bound, run
from agent_broker.db.session import read_session, transaction, write_session
from agent_broker.problems import ApiKeyDisabled, Forbidden, Unauthorized

__all__ = ["AuthPolicy", "Caller", "CredentialKind", "authenticated"]

API_KEY_HEADER = "x-api-key"
# Declares the scheme in /openapi.json; resolution itself is done below.
api_key_scheme = APIKeyHeader(name=API_KEY_HEADER, auto_error=False)

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
    request: Request, session: Session, presented: str | None, policy: AuthPolicy
) -> Caller:
    if not presented:
        raise Unauthorized()
    if CredentialKind.api_key not in policy.kinds:
        raise Unauthorized("An API key is not accepted on this route.")
    account = credentials.account_for_key(session, request.app.state.settings, presented)
    if account is None:
        raise Unauthorized("The API key is not recognised.")
    if account.status != "active":
        raise ApiKeyDisabled()
    caller = Caller(account=account, via=CredentialKind.api_key)
    missing = sorted(scope for scope in policy.scopes if not caller.has_scope(scope))
    if missing:
        raise Forbidden(f"This credential lacks the scope(s) needed here: {', '.join(missing)}.")
    return caller


def _dependency(policy: AuthPolicy) -> Any:
    if policy.detached:
        return _detached_dependency(policy)
    session_dependency = write_session if policy.writes else read_session

    @db_bound
    def resolve_caller(
        request: Request,
        session: Annotated[Session, Depends(session_dependency, scope="function")],
        presented: Annotated[str | None, Depends(api_key_scheme)],
    ) -> Caller:
        return _resolve(request, session, presented, policy)

    resolve_caller.policy = policy  # type: ignore[attr-defined]
    return resolve_caller


def _detached_dependency(policy: AuthPolicy) -> Any:
    async def resolve_caller(
        request: Request, presented: Annotated[str | None, Depends(api_key_scheme)]
    ) -> Caller:
        async with transaction(request.app.state.db, write=False) as session:
            return await run(session, _resolve, request, session, presented, policy)

    resolve_caller.policy = policy  # type: ignore[attr-defined]
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
