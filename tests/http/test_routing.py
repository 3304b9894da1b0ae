"""Route matching by index (agent_broker.http.routing) picks exactly the route that the
router's own scan picks, for every route of the app, and leaves 404, 405 and the
trailing-slash redirect to the scan."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Match

from agent_broker.http.routing import IndexedDispatch, index_routes

# Matching does not depend on the database.
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

_PARAM = re.compile(r"\{[^}]+\}")


def _scope(method: str, path: str) -> dict:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _first_full(routes: list[BaseRoute], method: str, path: str) -> BaseRoute | None:
    for route in routes:
        match, _ = route.matches(_scope(method, path))
        if match is Match.FULL:
            return route
    return None


def _requests(app: FastAPI) -> list[tuple[str, str]]:
    """A concrete request for every method of every route, and some that match nothing."""
    requests = []
    for route in app.router.routes:
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            continue
        concrete = _PARAM.sub("x1", path) or "/"
        for method in sorted(getattr(route, "methods", None) or {"GET"}):
            requests.append((method, concrete))
            requests.append((method, concrete + "/"))
    requests += [
        ("GET", "/"),
        ("GET", "/nowhere"),
        ("GET", "/v1/nowhere/x1"),
        ("DELETE", "/v1/account"),
        ("GET", "/v1"),
        ("GET", "/.well-known/nothing-here"),
    ]
    return requests


@sqlite_only
def test_the_index_picks_the_scans_route_for_every_request(app: FastAPI) -> None:
    dispatch = app.router.middleware_stack
    assert isinstance(dispatch, IndexedDispatch)
    dispatch._build()
    routes = list(app.router.routes)
    checked = 0
    for method, path in _requests(app):
        expected = _first_full(routes, method, path)
        assert _first_full(dispatch._candidates(path), method, path) is expected, (method, path)
        checked += expected is not None
    assert checked > 60  # every route of the app was reached through the index


@sqlite_only
def test_routes_are_flat(app: FastAPI) -> None:
    """No included router is left as a group to be scanned at request time."""
    assert all(getattr(route, "original_router", None) is None for route in app.router.routes)
    paths = {getattr(route, "path", None) for route in app.router.routes}
    assert {"/v1/account", "/v1/feed", "/v1/threads/{thread_id}", "/health"} <= paths


@sqlite_only
def test_misses_keep_the_routers_answers(client: TestClient) -> None:
    missing = client.get("/v1/nowhere")
    assert missing.status_code == 404
    wrong_method = client.delete("/v1/feed")
    assert wrong_method.status_code == 405
    assert wrong_method.headers["allow"] == "GET"
    redirected = client.get("/health/", follow_redirects=False)
    assert redirected.status_code == 307
    assert redirected.headers["location"].endswith("/health")
    assert client.get("/health").status_code == 200


@sqlite_only
def test_a_route_added_after_the_app_is_built_is_found(app: FastAPI) -> None:
    async def late() -> dict:
        return {"late": True}

    with TestClient(app) as client:
        assert client.get("/health").status_code == 200  # the index is built
        app.add_api_route("/late-route", late)
        answer = client.get("/late-route")
    assert answer.status_code == 200
    assert answer.json() == {"late": True}


def test_order_holds_across_prefixes_of_different_lengths() -> None:
    """Routes placed by one, two or no literal segments, interleaved: the first route that
    matches in the app's order still wins, and a mount is found below its path."""
    shapes = FastAPI()

    def named(name: str):  # type: ignore[no-untyped-def]
        async def endpoint() -> dict:
            return {"route": name}

        return endpoint

    for path, name in [
        ("/a/{x}", "a-param"),
        ("/a/b", "a-b"),
        ("/{y}/c", "any-c"),
        ("/a/b/{z}", "a-b-z"),
        ("/{anything:path}", "catch-all"),
    ]:
        shapes.add_api_route(path, named(name))
    index_routes(shapes)
    with TestClient(shapes) as client:
        assert client.get("/a/b").json() == {"route": "a-param"}  # declared first
        assert client.get("/a/c").json() == {"route": "a-param"}
        assert client.get("/q/c").json() == {"route": "any-c"}
        assert client.get("/a/b/1").json() == {"route": "a-b-z"}
        assert client.get("/z/z/z").json() == {"route": "catch-all"}
