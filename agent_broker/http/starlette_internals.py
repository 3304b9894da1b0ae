"""Every use the service makes of Starlette below its public API, in one place.

A planned route (agent_broker.http.routing) answers through Starlette's own exception
wrapping, as Starlette's request_response does, and the route index takes the router's
entry point, falling back to the router's own matching. The app also overrides
Starlette.build_middleware_stack (agent_broker.app), which the same test checks.
None of these is public API: each is named here, written for Starlette WRITTEN_FOR (the pin
in pyproject.toml). tests/test_framework_internals.py fails when the installed version
differs or a name used here has changed shape, and says what to check."""

from __future__ import annotations

from starlette._exception_handler import wrap_app_handling_exceptions
from starlette.routing import Router
from starlette.types import ASGIApp

WRITTEN_FOR = "1.10.0"


def router_matching(router: Router) -> ASGIApp:
    """The router's own matching of a request against its routes (404, 405 and the
    trailing-slash redirect included), without any middleware of the router's."""
    return router.app


def enter_router_through(router: Router, entry: ASGIApp) -> None:
    """Make `entry` what the router runs for each request, in place of its middleware
    stack and matching (the router's own matching stays at router_matching)."""
    router.middleware_stack = entry


__all__ = ["WRITTEN_FOR", "enter_router_through", "router_matching", "wrap_app_handling_exceptions"]
