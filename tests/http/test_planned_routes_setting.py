"""BROKER_PLANNED_ROUTES turns the speed layer off (routes laid out flat, the route index
and the planned handlers: agent_broker.http.routing), and the app answers exactly as
before: two apps over one database, one built each way, are sent the same requests and
must give the same status, headers (the request id aside) and body, for every route of
the app without credentials, for every read and the idempotent writes with a valid key,
and for every JSON body the document declares, sent invalid."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response

from agent_broker import clock
from agent_broker.http import handler
from agent_broker.http.fastapi_internals import included_router
from agent_broker.http.routing import BrokerRoute, FastAPIHandledRoute, IndexedDispatch
from tests.support.accounts import Agent
from tests.support.http import new_key
from tests.support.market import LISTING, finalize, open_thread, post, trader

_PARAM = re.compile(r"\{([^}]+)\}")
# What differs between any two answers, whichever path served them.
_VOLATILE_HEADERS = {"x-request-id"}
# Whose body holds request timings: only the request counters are compared.
_TIMED = {"/metrics"}
# Streams that stay open for as long as their client listens (MCP's server-sent events) or
# for BROKER_EVENT_STREAM_SECONDS (the events).
_OPEN_STREAMS = {("GET", "/mcp"), ("GET", "/v1/events/stream")}
_FROZEN = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)


@dataclass
class Pair:
    """The same service twice over one database: the speed layer on, and off."""

    planned: TestClient
    fastapi: TestClient

    def compare(self, method: str, path: str, *, first: str = "planned", **sent: Any) -> Response:
        """Send the request to both apps (in the order given: the first to see a write
        performs it, the second replays it) and require the same answer."""
        clients = [self.planned, self.fastapi]
        if first != "planned":
            clients.reverse()
        answers = [client.request(method, path, **sent) for client in clients]
        if first != "planned":
            answers.reverse()
        planned, fastapi = (_answer(a, path) for a in answers)
        assert planned == fastapi, (
            f"{method} {path}: the planned path answered {planned['status']} "
            f"{_reason(answers[0])} and FastAPI's {fastapi['status']} {_reason(answers[1])}"
        )
        return answers[0]


def _answer(response: Response, path: str) -> dict[str, Any]:
    headers = {k: v for k, v in response.headers.items() if k not in _VOLATILE_HEADERS}
    body = response.content
    if path in _TIMED:
        headers.pop("content-length", None)
        body = b"\n".join(
            line for line in body.splitlines() if line.startswith(b"broker_http_requests_total")
        )
    return {"status": response.status_code, "headers": headers, "body": body}


def _reason(response: Response) -> str:
    if response.headers.get("content-type", "").startswith("application/problem+json"):
        return str(response.json().get("reason"))
    return ""


@pytest.fixture
def pair(make_app: Callable[..., FastAPI]) -> Iterator[Pair]:
    planned = make_app(planned_routes=True, metrics_enabled=True)
    fastapi = make_app(planned_routes=False, metrics_enabled=True)
    with (
        TestClient(planned, raise_server_exceptions=False) as fast,
        TestClient(fastapi, raise_server_exceptions=False) as reference,
    ):
        yield Pair(fast, reference)


def _operations(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path) of every route of the app laid out flat, every method of each."""
    found = []
    for route in app.router.routes:
        path = getattr(route, "path", None)
        if isinstance(path, str):
            methods = getattr(route, "methods", None) or {"GET", "POST", "DELETE"}
            found += [(method, path) for method in sorted(methods)]
    return found


def _concrete(path: str, values: dict[str, str]) -> str:
    return _PARAM.sub(lambda m: values.get(m.group(1).split(":")[0], "x1"), path)


def test_off_every_request_takes_fastapis_path(
    make_app: Callable[..., FastAPI], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the setting off nothing of the speed layer runs: no index, no route laid out
    flat, no planned handler (its dependency solving is never called)."""
    planned_runs: list[str] = []
    solve = handler._solve

    async def counted(step: Any, request: Any, *args: Any) -> Any:
        planned_runs.append(request.url.path)
        return await solve(step, request, *args)

    monkeypatch.setattr(handler, "_solve", counted)
    fastapi = make_app(planned_routes=False)
    assert not isinstance(fastapi.router.middleware_stack, IndexedDispatch)
    assert any(included_router(route) is not None for route in fastapi.router.routes)
    assert fastapi.router.route_class is FastAPIHandledRoute

    @fastapi.get("/test/own-route")
    async def own_route() -> dict:
        return {}

    with TestClient(fastapi) as client:
        for path in ("/health", "/v1/feed", "/v1/account", "/test/own-route"):
            client.get(path)
    assert planned_runs == []

    planned = make_app()
    assert isinstance(planned.router.middleware_stack, IndexedDispatch)
    assert planned.router.route_class is BrokerRoute
    with TestClient(planned) as client:
        client.get("/health")
    assert planned_runs == ["/health"]


def test_every_route_answers_alike_without_credentials(pair: Pair) -> None:
    operations = _operations(pair.planned.app)  # type: ignore[arg-type]
    document = pair.compare("GET", "/openapi.json").json()
    documented = {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert documented <= set(operations), "a documented operation is not a route of the app"
    checked = 0
    for method, path in operations:
        if (method, path) in _OPEN_STREAMS:
            continue
        sent = {"json": {}} if method in {"POST", "PUT", "PATCH"} else {}
        pair.compare(method, _concrete(path, {}), **sent)
        checked += 1
    assert checked > 60  # the whole app, not an empty list
    # What the routers answer themselves: no route, a wrong method, a trailing slash.
    for method, path in [
        ("GET", "/nowhere"),
        ("GET", "/v1/nowhere/x1"),
        ("DELETE", "/v1/feed"),
        ("PUT", "/v1/account"),
        ("GET", "/health/"),
        ("GET", "/v1/listings/x1/"),
        ("POST", "/v1/listings/"),
    ]:
        pair.compare(method, path, follow_redirects=False)
    # The counters of /metrics name each request's route template: the same on both.
    pair.compare("GET", "/metrics")


@dataclass
class Trading:
    poster: Agent
    opener: Agent
    listing_id: str
    thread_id: str
    deal_id: str
    handle: str


@pytest.fixture
def trading(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> Trading:
    """Two traders, a live listing with an open thread, and a sealed deal (made through
    the planned app); then the clock stands still, so both apps see the same time."""
    client, app = pair.planned, pair.planned.app
    poster = trader(app, client, amount=50_000_000)
    opener = trader(app, client)
    sealed = post(client, poster).json()["id"]
    thread = open_thread(client, opener, sealed).json()["id"]
    deal = finalize(client, poster, thread)
    assert deal.status_code == 201, deal.text
    listing = post(client, poster, title="Convert PDF invoices to JSON")
    assert listing.status_code == 201, listing.text
    listing_id = listing.json()["id"]
    opened = open_thread(client, opener, listing_id)
    assert opened.status_code == 201, opened.text
    handle = client.get("/v1/account", headers=poster.headers).json()["handle"]
    monkeypatch.setattr(clock, "now", lambda: _FROZEN)
    return Trading(poster, opener, listing_id, opened.json()["id"], deal.json()["id"], handle)


def test_reads_and_idempotent_writes_answer_alike_with_a_key(pair: Pair, trading: Trading) -> None:
    values = {
        "listing_id": trading.listing_id,
        "thread_id": trading.thread_id,
        "deal_id": trading.deal_id,
        "handle": trading.handle,
    }
    reads = [
        (method, path)
        for method, path in _operations(pair.planned.app)  # type: ignore[arg-type]
        if method == "GET" and (method, path) not in _OPEN_STREAMS and path not in _TIMED
    ]
    for agent in (trading.poster, trading.opener):
        for method, path in reads:
            pair.compare(method, _concrete(path, values), headers=agent.headers)

    poster = trading.poster.headers
    contact = {"contact_name": "Ops Team", "contact_email": "ops@agents.dev"}
    pair.compare("PUT", "/v1/account/contact", headers=poster, json=contact)
    # Writes under an Idempotency-Key: the first app performs each, the other replays it,
    # which it finds only if the request reached the same route (the key's scope); each
    # path performs half of them.
    writes: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/v1/listings", {"json": {**LISTING, "title": "Summarise support tickets"}}),
        ("POST", f"/v1/threads/{trading.thread_id}/close", {}),
        ("POST", "/v1/listings", {"json": {**LISTING, "title": "Label product photos"}}),
    ]
    for turn, (method, path, sent) in enumerate(writes):
        headers = {**poster, "Idempotency-Key": new_key()}
        first = "planned" if turn % 2 == 0 else "fastapi"
        answer = pair.compare(method, path, first=first, headers=headers, **sent)
        assert answer.status_code < 300, answer.text
    opener = {**trading.opener.headers, "Idempotency-Key": new_key()}
    pair.compare(
        "POST",
        f"/v1/listings/{trading.listing_id}/threads",
        first="fastapi",
        headers=opener,
        json={"diff": "Half the files by Friday for $1.20"},
    )


def test_invalid_bodies_answer_alike(pair: Pair, trading: Trading) -> None:
    document = pair.compare("GET", "/openapi.json").json()
    values = {
        "listing_id": trading.listing_id,
        "thread_id": trading.thread_id,
        "deal_id": trading.deal_id,
        "handle": trading.handle,
    }
    with_bodies = [
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict)
        and "application/json" in operation.get("requestBody", {}).get("content", {})
    ]
    assert len(with_bodies) > 10
    for method, path in with_bodies:
        target = _concrete(path, values)
        for agent in (trading.poster, trading.opener):
            headers = {**agent.headers, "Idempotency-Key": new_key()}
            pair.compare(method, target, headers=headers, json=["not", "an", "object"])
            pair.compare(method, target, headers=headers, json={"unexpected": {"x": 1}})
            pair.compare(
                method,
                target,
                content=b'{"cut": ',
                headers={**headers, "content-type": "application/json"},
            )
            pair.compare(
                method, target, content=b"plain", headers={**headers, "content-type": "text/plain"}
            )
