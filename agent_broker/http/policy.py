"""What a route says about its callers, and nothing of how they are resolved. Each route
declares its policy, which credential kinds it accepts, the scopes it needs and whether it
is metered (payable per call); the authenticator that create_app registers
(agent_broker.auth) resolves the caller from whatever credential the request carries.
Routes never read credential headers themselves.

A policy that does not list a kind refuses it, so a route opens to a new kind only by
saying so."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from fastapi import Depends, Request

from agent_broker.http.context import context_of
from agent_broker.http.fastapi_internals import get_authorization_scheme_param


class CredentialKind(StrEnum):
    api_key = "api_key"
    session = "session"  # a dashboard session (identity-provider JWT)
    oauth = "oauth"  # an agent's OAuth access token (JWT)
    x402 = "x402"  # a payment, on the metered routes


KEY = frozenset({CredentialKind.api_key})
KEY_OR_SESSION = frozenset({CredentialKind.api_key, CredentialKind.session})
KEY_OR_OAUTH = frozenset({CredentialKind.api_key, CredentialKind.oauth})

API_KEY_HEADER = "x-api-key"
# How /openapi.json names the two credentials a route may take (security_of below says
# which, per route; agent_broker.http.responses writes them out).
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

    @cached_property  # asked on every request; the policy never changes
    def bearer(self) -> CredentialKind | None:
        """The bearer token kind this policy accepts: a session or an agent's OAuth token
        (no route takes both), or None: the route ignores the Authorization header."""
        if CredentialKind.session in self.kinds:
            return CredentialKind.session
        if CredentialKind.oauth in self.kinds:
            return CredentialKind.oauth
        return None


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


def security_of(policy: AuthPolicy) -> tuple[str, ...]:
    """The credentials /openapi.json lists for a route with this policy, in its order."""
    if policy.bearer is not None:
        return (BEARER_SCHEME, API_KEY_SCHEME)
    return (API_KEY_SCHEME,)


def _dependency(policy: AuthPolicy) -> Any:
    """One dependency, the request its only parameter: each dependency FastAPI solves per
    request costs more than reading a header, so the authenticator reads them all."""
    if policy.metered and policy.detached:
        raise ValueError("a payable route cannot be detached (a payment settles before it)")

    async def resolve_caller(request: Request) -> Any:
        return await context_of(request).authenticator(request, policy)

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
