"""A planned handler (agent_broker.http.handler) answers every request exactly as FastAPI's
own handler does: the same routes are served by a BrokerRoute router and by a plain
APIRouter, and each request must get the same status, headers and body from both."""

from __future__ import annotations

import email.message
from typing import Annotated

import pytest
from fastapi import APIRouter, Cookie, Depends, FastAPI, Header, Query, Request, Response
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from agent_broker.http.handler import Unplanned, is_json_content_type, planned_handler
from agent_broker.http.routing import BrokerRoute, include_flat

# The service's routes are planned alike on either database.
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

calls: list[str] = []


class Item(BaseModel):
    name: str = Field(min_length=2, max_length=10)
    price: int = Field(ge=0)


class Filters(BaseModel):
    limit: int = Field(10, le=50)
    tags: list[str] = []


class Out(BaseModel):
    name: str
    price: int
    tag: str


async def trace(request: Request) -> str:
    calls.append("trace")
    return request.headers.get("x-trace", "none")


def sync_part(tag: Annotated[str, Depends(trace)], limit: int = Query(5, le=10)) -> str:
    return f"{tag}:{limit}"


async def status_setter(response: Response, x_status: Annotated[int | None, Header()] = None):
    if x_status:
        response.status_code = x_status
        response.headers["x-set-by"] = "dependency"


def _routes(router: APIRouter) -> None:
    @router.post("/items/{item_id}", response_model=Out, status_code=201)
    async def create(
        item_id: int,
        item: Item,
        tag: Annotated[str, Depends(trace)],
        part: Annotated[str, Depends(sync_part)],
        again: Annotated[str, Depends(trace)],
        _: Annotated[None, Depends(status_setter)],
        verbose: Annotated[int, Query(le=1)] = 0,
        x_count: Annotated[int, Header(ge=0)] = 0,
    ) -> dict:
        return {"name": item.name, "price": item.price + item_id, "tag": f"{tag}/{part}/{again}"}

    @router.get("/plain")
    def plain(
        q: Annotated[list[str], Query()] = [],  # noqa: B006 - FastAPI reads the default
        session: Annotated[str | None, Cookie()] = None,
        sort: Annotated[str, Query(alias="order-by", pattern="^(newest|price)$")] = "newest",
        x_request_tag: Annotated[str | None, Header()] = None,
        x_list: Annotated[list[int], Header()] = [],  # noqa: B006
    ) -> dict:
        return {"q": q, "session": session, "sort": sort, "tag": x_request_tag, "list": x_list}

    @router.get("/filtered")
    async def filtered(filters: Annotated[Filters, Query()]) -> dict:
        return filters.model_dump()

    @router.post("/embedded")
    async def embedded(a: Item, b: Item) -> dict:
        return {"total": a.price + b.price}

    @router.delete("/gone", status_code=204)
    async def gone() -> None:
        return None

    @router.get("/raw")
    async def raw() -> Response:
        return Response(b"raw", media_type="text/plain", headers={"x-raw": "1"})


def _app(route_class: type[APIRoute]) -> FastAPI:
    app = FastAPI()
    router = APIRouter(route_class=route_class)
    _routes(router)
    if route_class is BrokerRoute:
        include_flat(app, [router])  # as the service lays its routes out
    else:
        app.include_router(router)
    return app


REQUESTS = [
    ("POST", "/items/3", {"json": {"name": "lamp", "price": 4}}, {}),
    (
        "POST",
        "/items/3",
        {"json": {"name": "lamp", "price": 4}},
        {"x-trace": "t", "x-status": "202"},
    ),
    ("POST", "/items/3?limit=7", {"json": {"name": "lamp", "price": 4}}, {}),
    ("POST", "/items/3?limit=70", {"json": {"name": "l", "price": -1}}, {}),
    ("POST", "/items/x", {"json": {"name": "lamp"}}, {}),
    ("POST", "/items/x?verbose=5&limit=11", {"json": {"name": "l"}}, {"x-count": "-1"}),
    ("POST", "/items/3", {"content": b"{not json"}, {"content-type": "application/json"}),
    ("POST", "/items/3", {"content": b'{"name":"lamp","price":1}'}, {"content-type": "text/plain"}),
    ("POST", "/items/3", {"content": b'{"name":"lamp","price":1}'}, {}),
    (
        "POST",
        "/items/3",
        {"content": b'{"name":"lamp","price":1}'},
        {"content-type": "application/vnd.api+json; charset=utf-8"},
    ),
    ("POST", "/items/3", {"content": b""}, {"content-type": "application/json"}),
    ("POST", "/items/3", {"json": [1, 2]}, {}),
    ("GET", "/plain?q=a&q=b", {}, {"cookie": "session=abc"}),
    ("GET", "/plain", {}, {}),
    ("GET", "/plain?order-by=price&q=", {}, {"x-request-tag": "t", "x-list": "1"}),
    ("GET", "/plain?order-by=oldest&sort=price", {}, {"x-list": "one"}),
    ("GET", "/filtered?limit=70&tags=a&tags=b", {}, {}),
    ("GET", "/filtered?tags=a", {}, {}),
    (
        "POST",
        "/embedded",
        {"json": {"a": {"name": "ab", "price": 1}, "b": {"name": "cd", "price": 2}}},
        {},
    ),
    ("POST", "/embedded", {"json": {"a": {"name": "ab", "price": 1}}}, {}),
    ("DELETE", "/gone", {}, {}),
    ("GET", "/raw", {}, {}),
]


def _answer(client: TestClient, method: str, path: str, body: dict, headers: dict) -> tuple:
    calls.clear()
    response = client.request(method, path, headers=headers, **body)
    return response.status_code, sorted(response.headers.items()), response.content, list(calls)


@pytest.mark.parametrize(("method", "path", "body", "headers"), REQUESTS)
def test_a_planned_route_answers_as_fastapis_handler(
    method: str, path: str, body: dict, headers: dict
) -> None:
    planned, plain = _app(BrokerRoute), _app(APIRoute)
    served = [route for route in planned.router.routes if isinstance(route, BrokerRoute)]
    assert len(served) == 6
    assert all("_planned_app" in route.app.__qualname__ for route in served)
    with TestClient(planned) as fast, TestClient(plain) as reference:
        assert _answer(fast, method, path, body, headers) == _answer(
            reference, method, path, body, headers
        )


def test_a_dependency_runs_once_per_request_and_its_cache_is_per_request() -> None:
    with TestClient(_app(BrokerRoute)) as client:
        for _ in range(2):
            calls.clear()
            response = client.post("/items/1", json={"name": "lamp", "price": 1})
            assert response.status_code == 201
            assert calls == ["trace"]


@sqlite_only
def test_every_route_of_the_service_is_planned(app: FastAPI) -> None:
    unplanned = []
    for route in app.router.routes:
        if isinstance(route, BrokerRoute):
            try:
                planned_handler(route)
            except Unplanned as reason:
                unplanned.append((route.path, str(reason)))
    assert unplanned == []


def held():  # noqa: ANN201
    yield "held"


def test_a_dependency_with_yield_keeps_fastapis_handler() -> None:
    router = APIRouter(route_class=BrokerRoute)

    @router.get("/held")
    async def uses(value: Annotated[str, Depends(held)]) -> dict:
        return {"value": value}

    route = router.routes[0]
    with pytest.raises(Unplanned):
        planned_handler(route)  # type: ignore[arg-type]
    app = FastAPI()
    app.include_router(router)
    with TestClient(app) as client:
        assert client.get("/held").json() == {"value": "held"}


@pytest.mark.parametrize(
    "value",
    [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        " application/json ;x=y",
        "application/problem+json",
        "application/jsonx",
        "application/x-json",
        "text/json",
        "application",
        "application/json/extra",
        "",
        ";application/json",
        "application/ld+json",
    ],
)
def test_the_content_type_rule_is_the_email_packages(value: str) -> None:
    message = email.message.Message()
    message["content-type"] = value
    expected = message.get_content_maintype() == "application" and (
        message.get_content_subtype() == "json" or message.get_content_subtype().endswith("+json")
    )
    assert is_json_content_type(value) is expected
