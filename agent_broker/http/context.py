"""The application context: what routes, MCP tools, jobs and operator commands need from
the running service, built once by `create_app` (agent_broker.app.build_context) and
never changed afterwards.

The services every layer uses are typed fields. A service owned by a package above this
one (the token signer, x402, the agent card, metrics) is a *part*, looked up by its own
class: `context.part(Signer)` is typed as a `Signer` without this module importing the
package that defines it, so the layers keep pointing down (pyproject's import contract).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from starlette.requests import Request

from agent_broker.config import Settings
from agent_broker.db.engine import Database
from agent_broker.http.jwt_bearer import JwtVerifier
from agent_broker.http.outbound import OutboundClient
from agent_broker.http.rate_limits import RateLimiter

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import HTTPConnection


T = TypeVar("T")


class Authenticator(Protocol):
    """Resolves the caller of a request under a route's policy (agent_broker.auth; the
    policy is agent_broker.http.policy's AuthPolicy, which reads this context)."""

    async def __call__(self, request: Request, policy: Any) -> Any: ...


class MissingPart(LookupError):
    """A part asked for that this app was built without (a programming error)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AppContext:
    settings: Settings
    db: Database
    rate_limiter: RateLimiter
    # Fetches to hosts an account chose (guarded against private addresses) ...
    outbound: OutboundClient
    # ... and to hosts the operator configured (identity provider key sets, processors).
    operator_outbound: OutboundClient
    authenticator: Authenticator
    session_verifier: JwtVerifier | None = None
    oauth_verifier: JwtVerifier | None = None
    parts: MappingProxyType[type, Any] = field(default_factory=lambda: MappingProxyType({}))

    @staticmethod
    def collect(parts: Iterable[object]) -> MappingProxyType[type, Any]:
        """Parts keyed by their own class; two of one class are a mistake."""
        table: dict[type, Any] = {}
        for part in parts:
            if type(part) in table:
                raise ValueError(f"two parts of class {type(part).__name__}")
            table[type(part)] = part
        return MappingProxyType(table)

    def part(self, kind: type[T]) -> T:
        found = self.parts.get(kind)
        if found is None:
            raise MissingPart(f"this app has no {kind.__name__}")
        return found  # type: ignore[no-any-return]

    def optional(self, kind: type[T]) -> T | None:
        """A part the deployment may leave out (x402 when payments are off, metrics)."""
        return self.parts.get(kind)  # type: ignore[no-any-return]

    def with_db(self, db: Database) -> AppContext:
        """The same context over another database handle (the jobs' connections)."""
        return replace(self, db=db)


def context_of(request: HTTPConnection) -> AppContext:
    """The context of the app serving a request (read on every request: one lookup)."""
    context: AppContext = request.app.state.context
    return context


def app_context(app: Starlette) -> AppContext:
    context: AppContext = app.state.context
    return context
