"""Route matching by index instead of by scan.

FastAPI keeps each included router as a nested group and matches a request by trying every
group and every route in order, twice for the group that matches: about half the CPU of a
cheap request went there. The service's routers carry their full paths and no prefix or
dependencies of their own at inclusion, so their routes are laid out flat on the app, and a
request is matched only against the routes whose literal leading path segments agree with
its own, in the app's order. Whatever the index does not settle with a full match (a 404,
a 405, a trailing-slash redirect, a partial match) goes to the router's own scan, so every
answer stays exactly FastAPI's."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Host, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_broker.db import outages
from agent_broker.db.session import TRANSACTIONS, RequestTransactions
from agent_broker.http.context import context_of
from agent_broker.http.fastapi_internals import Dependant, included_router
from agent_broker.http.handler import Handler, Unplanned, planned_handler
from agent_broker.http.starlette_internals import (
    enter_router_through,
    router_matching,
    wrap_app_handling_exceptions,
)

_Key = tuple[str, ...]


def _asks_for_a_session(dependant: Dependant) -> bool:
    return any(
        getattr(sub.call, "opens_request_session", False) or _asks_for_a_session(sub)
        for sub in dependant.dependencies
    )


_READS = frozenset({"GET", "HEAD"})


def _may_run_again(request: Request, opened: RequestTransactions, error: BaseException) -> bool:
    """A read whose connection the server closed under it runs once more, on a fresh
    connection: it changed nothing. A write never does (its client retries it with its
    Idempotency-Key), nor a request that opened a write transaction
    (docs/decisions/outages.md)."""
    return (
        request.method in _READS
        and not opened.wrote
        and isinstance(error, Exception)
        and outages.lost(error)
    )


class BrokerRoute(APIRoute):
    """A route whose request sessions (agent_broker.db.session.ReadSession/WriteSession)
    end with its handler: committed once the handler has built the response, before it is
    sent, and rolled back if the handler raises, before the problem handler answers.

    Its handler is planned at startup (agent_broker.http.handler) when the route allows;
    FastAPI's own handler stays for the rest, and for a request made while the route's
    dependency overrides are set. The planned handler serves requests matched to the
    route itself (include_flat); an app that includes the route's router as FastAPI does
    (include_nested) serves it with FastAPI's handler."""

    # Whether the route plans its handler (FastAPIHandledRoute does not).
    plans_handler = True

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        if not self.plans_handler:
            return
        try:
            planned = planned_handler(self)
        except Unplanned:
            return
        self.app = _planned_app(
            self._in_request_transactions(planned), self.app, self.dependency_overrides_provider
        )

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        return self._in_request_transactions(super().get_route_handler())

    def _in_request_transactions(self, handler: Handler) -> Handler:
        if not _asks_for_a_session(self.dependant):
            return handler

        async def in_request_transactions(request: Request) -> Response:
            db = context_of(request).db
            retried = False
            while True:
                opened = request.scope[TRANSACTIONS] = RequestTransactions(db)
                try:
                    response = await handler(request)
                    await opened.end(None)
                    return response
                except BaseException as error:
                    await opened.end(error)
                    if retried or not _may_run_again(request, opened, error):
                        raise
                    retried = True

        return in_request_transactions


class FastAPIHandledRoute(BrokerRoute):
    """A BrokerRoute served by FastAPI's own handler: the route class of an app's own
    routes with BROKER_PLANNED_ROUTES off."""

    plans_handler = False


def _planned_app(handler: Handler, fastapi_app: ASGIApp, overrides: Any) -> ASGIApp:
    """What FastAPI's request_response does for a planned handler, without the two exit
    stacks it opens for dependencies with yield (a planned route has none)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if overrides is not None and overrides.dependency_overrides:
            await fastapi_app(scope, receive, send)
            return
        request = Request(scope, receive, send)

        async def respond(scope: Scope, receive: Receive, send: Send) -> None:
            response = await handler(request)
            await response(scope, receive, send)

        await wrap_app_handling_exceptions(respond, request)(scope, receive, send)

    return app


def include_flat(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Include each router (its lifespan and bookkeeping as FastAPI does it), then put its
    routes in its place, so the app's route list holds routes only."""
    include_nested(app, routers)
    flat: list[BaseRoute] = []
    for route in app.router.routes:
        included = included_router(route)
        if included is None:
            flat.append(route)
        else:
            flat.extend(included[0].routes)
    app.router.routes[:] = flat


def include_nested(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Include each router as FastAPI does, matched and served by FastAPI itself
    (BROKER_PLANNED_ROUTES off), after the checks include_flat needs too: no prefix or
    dependencies at inclusion (a flat route carries its own), and routes that end their
    request sessions (BrokerRoute)."""
    for router in routers:
        for route in router.routes:
            if isinstance(route, APIRoute) and not isinstance(route, BrokerRoute):
                raise TypeError(f"{route.path}: declare its router with route_class=BrokerRoute")
        app.include_router(router)
        included = included_router(app.router.routes[-1])
        if included is not None and (included[1].prefix or included[1].dependencies):
            raise ValueError(
                "a router included with a prefix or dependencies cannot be flat: "
                "its routes carry their full paths and dependencies"
            )


def _literal_segments(route: BaseRoute) -> _Key | None:
    """The path segments before the route's first parameter, at most two; None for a route
    the index cannot place (a host route, or one of unknown shape)."""
    if isinstance(route, Host):
        return None
    path = getattr(route, "path", None)
    if not isinstance(path, str) or not path.startswith("/"):
        return None
    literal: list[str] = []
    for segment in path[1:].split("/"):
        if "{" in segment or len(literal) == 2:
            break
        literal.append(segment)
    if literal == [""]:  # the root path "/"
        return ()
    # A mount matches its path and everything below it, which all starts with its segments.
    return tuple(literal)


class IndexedDispatch:
    """The router's entry point: candidates by (first, second) path segment, falling back to
    the router's own matching."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self._scan = router_matching(router)
        self._built_for: int = -1
        self._by_two: dict[_Key, list[BaseRoute]] = {}
        self._by_one: dict[str, list[BaseRoute]] = {}
        self._anywhere: list[BaseRoute] = []

    def _build(self) -> None:
        routes = list(self.router.routes)
        placed = [(route, _literal_segments(route)) for route in routes]
        keys = {key for _, key in placed if key}
        # Every bucket lists, in the app's order, each route that could match a path with
        # that prefix: its own routes, the shorter-prefixed ones, and the unplaceable ones.
        self._by_two = {
            key: [r for r, at in placed if self._could_match(at, key)]
            for key in keys
            if len(key) == 2
        }
        self._by_one = {
            key[0]: [r for r, at in placed if self._could_match(at, key[:1])] for key in keys
        }
        self._anywhere = [r for r, at in placed if not at]
        self._built_for = len(routes)

    @staticmethod
    def _could_match(placed: _Key | None, key: _Key) -> bool:
        if not placed:  # unplaceable or the root: checked for every path
            return True
        return key[: len(placed)] == placed

    def _candidates(self, path: str) -> list[BaseRoute]:
        parts = path[1:].split("/", 2)
        if len(parts) >= 2:
            found = self._by_two.get((parts[0], parts[1]))
            if found is not None:
                return found
        return self._by_one.get(parts[0], self._anywhere)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await self._scan(scope, receive, send)
            return
        if self._built_for != len(self.router.routes):
            self._build()
        for route in self._candidates(scope["path"]):
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.setdefault("router", self.router)
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
        await self._scan(scope, receive, send)


def broker_router(**options: Any) -> APIRouter:
    """An APIRouter whose routes are BrokerRoutes."""
    return APIRouter(route_class=BrokerRoute, **options)


def index_routes(app: FastAPI) -> None:
    """Route the app's requests through the index (after every route is added; a route
    added later is picked up on the next request, by count)."""
    enter_router_through(app.router, IndexedDispatch(app.router))
