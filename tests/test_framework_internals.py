"""The service's uses of FastAPI, Starlette and SQLAlchemy internals, one module per
framework (agent_broker.http.fastapi_internals, agent_broker.http.starlette_internals,
agent_broker.db.sqlalchemy_internals), still fit the installed frameworks.

Each module was written for one exact release, the one pyproject.toml pins: these tests
fail as soon as another is installed, and when a name the module uses is gone or has
another shape (its parameters, or what it does to a small example), saying what to check
before the module may say it is written for the new release."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, Body, Depends, FastAPI, Form, Query
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel
from sqlalchemy import Integer, String, bindparam, create_engine, event, insert, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.types import TypeEngine
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route, Router

from agent_broker.db import sqlalchemy_internals
from agent_broker.db.base import UTCDateTime
from agent_broker.http import fastapi_internals, starlette_internals

_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

_FASTAPI_CHECK = (
    "Re-check each name agent_broker/http/fastapi_internals.py takes from FastAPI against "
    "the new release's source (what it does, not only its signature), then run "
    "tests/http/test_planned_handler.py, tests/http/test_routing.py and "
    "tests/http/test_planned_routes_setting.py; BROKER_PLANNED_ROUTES=false serves "
    "everything through FastAPI's own path meanwhile."
)
_STARLETTE_CHECK = (
    "Re-check agent_broker/http/starlette_internals.py (the exception wrapping of a planned "
    "route, the router's entry point and matching) and BrokerAPI.build_middleware_stack "
    "against the new release, then run tests/http/test_planned_handler.py, "
    "tests/http/test_routing.py and tests/http/test_planned_routes_setting.py."
)
_SQLALCHEMY_CHECK = (
    "Re-check each function of agent_broker/db/sqlalchemy_internals.py against the new "
    "release's source (the session's unflushed state, Connection around a pooled "
    "connection, the nested pool checkout, the compiler's and types' processors, the event "
    "system's per-class listener lists), then run tests/test_light_session.py, "
    "tests/test_light_session_events.py, tests/test_prepared.py, tests/test_group_commit.py "
    "and tests/ledger/test_events.py on both databases."
)


def _pinned(distribution: str) -> str:
    """The exact version pyproject.toml pins the distribution at."""
    dependencies = tomllib.loads(_PYPROJECT.read_text())["project"]["dependencies"]
    for requirement in dependencies:
        found = re.fullmatch(rf"{re.escape(distribution)}(\[[^\]]*\])?==([^\s;]+)", requirement)
        if found:
            return found.group(2)
    raise AssertionError(f"pyproject.toml pins no exact version of {distribution}")


@pytest.mark.parametrize(
    ("distribution", "module", "check"),
    [
        ("fastapi", fastapi_internals, _FASTAPI_CHECK),
        ("starlette", starlette_internals, _STARLETTE_CHECK),
        ("sqlalchemy", sqlalchemy_internals, _SQLALCHEMY_CHECK),
    ],
    ids=["fastapi", "starlette", "sqlalchemy"],
)
def test_each_module_is_written_for_the_installed_and_pinned_release(
    distribution: str, module: Any, check: str
) -> None:
    installed, pinned = version(distribution), _pinned(distribution)
    assert module.WRITTEN_FOR == pinned == installed, (
        f"{module.__name__} was written for {distribution} {module.WRITTEN_FOR}; "
        f"pyproject.toml pins {pinned} and {installed} is installed. {check}"
    )


def _shape(name: str, found: Any, parameters: list[str], check: str, *, coroutine: bool) -> None:
    assert callable(found), f"{name} is no longer callable. {check}"
    actual = list(inspect.signature(found).parameters)
    assert actual == parameters, f"{name} takes {actual}, not {parameters}. {check}"
    assert inspect.iscoroutinefunction(found) is coroutine, (
        f"{name} is {'no longer' if not coroutine else 'not'} a coroutine function. {check}"
    )


# --- FastAPI ----------------------------------------------------------------------------

_FASTAPI_FUNCTIONS = {
    "field_annotation_is_sequence": (["annotation"], False),
    "param_aliases": (["field", "convert_underscores"], False),
    "param_model": (["field"], False),
    "is_json_field": (["field"], False),
    "validate_param": (["field", "value", "values", "loc"], False),
    "request_params_to_args": (["fields", "received_params"], False),
    "request_body_to_args": (["body_fields", "received_body", "embed_body_fields"], True),
    "dependency_cache_key": (["dependant", "uses_scopes_cache"], False),
    "is_async_gen_callable": (["call"], False),
    "is_coroutine_callable": (["call"], False),
    "is_gen_callable": (["call"], False),
    "endpoint_context_of": (["func"], False),
    "serialize_response": (
        [
            "field",
            "response_content",
            "include",
            "exclude",
            "by_alias",
            "exclude_unset",
            "exclude_defaults",
            "exclude_none",
            "is_coroutine",
            "endpoint_ctx",
            "dump_json",
        ],
        True,
    ),
    "is_body_allowed_for_status_code": (["status_code"], False),
    "get_authorization_scheme_param": (["authorization_header_value"], False),
}

# What the planned handler reads of a Dependant (agent_broker.http.handler._plan) and the
# auth seam of a route's (agent_broker.http.policy.policy_of).
_DEPENDANT_FIELDS = {
    "call",
    "name",
    "path",
    "use_cache",
    "dependencies",
    "path_params",
    "query_params",
    "header_params",
    "cookie_params",
    "body_params",
    "request_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
    "websocket_param_name",
    "concurrency",
}

# What the planned handler reads of an APIRoute (agent_broker.http.handler.planned_handler,
# agent_broker.http.routing).
_ROUTE_ATTRIBUTES = {
    "dependant",
    "body_field",
    "response_field",
    "stream_item_field",
    "strict_content_type",
    "response_class",
    "status_code",
    "response_model_include",
    "response_model_exclude",
    "response_model_by_alias",
    "response_model_exclude_unset",
    "response_model_exclude_defaults",
    "response_model_exclude_none",
    "dependency_overrides_provider",
}


@pytest.mark.parametrize("name", sorted(_FASTAPI_FUNCTIONS))
def test_fastapi_functions_keep_their_shape(name: str) -> None:
    parameters, coroutine = _FASTAPI_FUNCTIONS[name]
    found = getattr(fastapi_internals, name)
    _shape(
        f"FastAPI's {found.__module__}.{found.__qualname__}",
        found,
        parameters,
        _FASTAPI_CHECK,
        coroutine=coroutine,
    )


class _Item(BaseModel):
    name: str


def _route_with_a_body() -> APIRoute:
    router = APIRouter()

    async def needs() -> int:
        return 1

    @router.post("/items", status_code=201)
    async def create(item: _Item, count: int = Body(embed=True), one: int = Depends(needs)):
        return {}

    route = router.routes[-1]
    assert isinstance(route, APIRoute)
    return route


def test_fastapi_routes_and_dependants_keep_what_the_plan_reads() -> None:
    route = _route_with_a_body()
    missing = sorted(a for a in _ROUTE_ATTRIBUTES if not hasattr(route, a))
    assert not missing, f"APIRoute has no {missing}. {_FASTAPI_CHECK}"
    fields = set(getattr(fastapi_internals.Dependant, "__dataclass_fields__", {}))
    assert fields >= _DEPENDANT_FIELDS, (
        f"Dependant has no {sorted(_DEPENDANT_FIELDS - fields)}. {_FASTAPI_CHECK}"
    )
    assert fastapi_internals.embeds_body_fields(route) is True, (
        f"APIRoute._embed_body_fields no longer says two body parameters are embedded. "
        f"{_FASTAPI_CHECK}"
    )
    dependant = route.dependant
    assert dependant is not None and [d.call.__name__ for d in dependant.dependencies] == [
        "needs"
    ], f"Dependant.dependencies no longer lists a route's dependencies. {_FASTAPI_CHECK}"
    placeholder = fastapi_internals.DefaultPlaceholder(3)
    assert placeholder.value == 3, f"DefaultPlaceholder keeps no .value. {_FASTAPI_CHECK}"
    assert isinstance(Query(), fastapi_internals.Param), f"Query() is no Param. {_FASTAPI_CHECK}"
    assert isinstance(Form(), fastapi_internals.Form), f"Form() is no params.Form. {_FASTAPI_CHECK}"
    validation = inspect.signature(RequestValidationError.__init__).parameters
    assert "endpoint_ctx" in validation, (
        f"RequestValidationError takes no endpoint_ctx. {_FASTAPI_CHECK}"
    )


def test_fastapi_included_routers_are_read_as_the_plan_reads_them() -> None:
    router = APIRouter()

    @router.get("/inner")
    async def inner() -> dict:
        return {}

    app = FastAPI()
    app.include_router(router, prefix="/p", dependencies=[Depends(lambda: None)])
    included = fastapi_internals.included_router(app.router.routes[-1])
    assert included is not None, (
        f"include_router no longer leaves an entry with original_router. {_FASTAPI_CHECK}"
    )
    original, context = included
    assert original is router and context.prefix == "/p" and len(context.dependencies) == 1, (
        f"the include context no longer names the prefix and dependencies. {_FASTAPI_CHECK}"
    )
    assert fastapi_internals.included_router(router.routes[0]) is None
    served = list(fastapi_internals.served_routes(app.router.routes))
    assert router.routes[0] in served, (
        f"iter_route_contexts no longer yields an included router's routes. {_FASTAPI_CHECK}"
    )


# --- Starlette --------------------------------------------------------------------------


def test_starlette_names_keep_their_shape() -> None:
    _shape(
        "starlette._exception_handler.wrap_app_handling_exceptions",
        starlette_internals.wrap_app_handling_exceptions,
        ["app", "conn"],
        _STARLETTE_CHECK,
        coroutine=False,
    )
    _shape(
        "Router.app",
        Router.app,
        ["self", "scope", "receive", "send"],
        _STARLETTE_CHECK,
        coroutine=True,
    )
    _shape(
        "Starlette.build_middleware_stack",
        Starlette.build_middleware_stack,
        ["self"],
        _STARLETTE_CHECK,
        coroutine=False,
    )


def test_starlette_routers_run_their_entry_and_keep_their_matching() -> None:
    import asyncio

    async def endpoint(request: Any) -> Response:
        return Response(status_code=204)

    router = Router(routes=[Route("/x", endpoint)])
    entered: list[str] = []
    matching = starlette_internals.router_matching(router)

    async def entry(scope: Any, receive: Any, send: Any) -> None:
        entered.append(scope["path"])
        await matching(scope, receive, send)

    starlette_internals.enter_router_through(router, entry)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/x", "root_path": "", "headers": []}
    asyncio.run(router(scope, receive, send))
    assert entered == ["/x"], f"Router.__call__ no longer runs middleware_stack. {_STARLETTE_CHECK}"
    assert sent[0]["status"] == 204, f"Router.app no longer matches the routes. {_STARLETTE_CHECK}"


# --- SQLAlchemy -------------------------------------------------------------------------


class _Base(DeclarativeBase):
    pass


class _Thing(_Base):
    __tablename__ = "things"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(10), default="unnamed")
    at: Mapped[Any] = mapped_column(UTCDateTime(), nullable=True)


_table = _Thing.__table__


def test_sqlalchemy_names_keep_their_shape() -> None:
    from sqlalchemy import Connection
    from sqlalchemy.pool.base import _ConnectionFairy

    shapes = [
        (
            "Connection.__init__",
            Connection.__init__,
            [
                "self",
                "engine",
                "connection",
                "_has_events",
                "_allow_revalidate",
                "_allow_autobegin",
            ],
        ),
        ("_ConnectionFairy._checkout_existing", _ConnectionFairy._checkout_existing, ["self"]),
        (
            "TypeEngine._cached_result_processor",
            TypeEngine._cached_result_processor,
            ["self", "dialect", "coltype"],
        ),
        (
            "DBAPIError.instance",
            sa_exc.DBAPIError.instance,
            [
                "statement",
                "params",
                "orig",
                "dbapi_base_err",
                "hide_parameters",
                "connection_invalidated",
                "dialect",
                "ismulti",
            ],
        ),
    ]
    for name, found, parameters in shapes:
        _shape(name, found, parameters, _SQLALCHEMY_CHECK, coroutine=False)
    assert issubclass(_ConnectionFairy, PoolProxiedConnection)


def test_sqlalchemy_sessions_connections_and_pools_behave_as_used(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'internals.db'}")
    _Base.metadata.create_all(engine)
    try:
        with Session(engine) as session:
            assert sqlalchemy_internals.has_unflushed_changes(session) is False
            thing = _Thing(id=1)
            session.add(thing)
            assert sqlalchemy_internals.has_unflushed_changes(session) is True, (
                f"Session._new no longer holds an added object. {_SQLALCHEMY_CHECK}"
            )
            session.flush()
            assert sqlalchemy_internals.has_unflushed_changes(session) is False
            thing.name = "changed"
            assert sqlalchemy_internals.has_unflushed_changes(session) is True, (
                f"identity_map._modified no longer holds a changed object. {_SQLALCHEMY_CHECK}"
            )
            session.flush()
            session.delete(thing)
            assert sqlalchemy_internals.has_unflushed_changes(session) is True, (
                f"Session._deleted no longer holds a deleted object. {_SQLALCHEMY_CHECK}"
            )

        pooled = engine.pool.connect()
        nested = sqlalchemy_internals.nested_checkout(pooled)
        assert nested.dbapi_connection is pooled.dbapi_connection, _SQLALCHEMY_CHECK
        nested.close()
        assert engine.pool.checkedout() == 1, (
            f"a nested checkout was checked in. {_SQLALCHEMY_CHECK}"
        )
        connection = sqlalchemy_internals.connection_around(engine, pooled)
        assert connection.connection.dbapi_connection is pooled.dbapi_connection
        connection.close()
        assert engine.pool.checkedout() == 0, (
            f"closing a Connection around a pooled connection no longer checks it in. "
            f"{_SQLALCHEMY_CHECK}"
        )
        try:
            engine.pool.connect().dbapi_connection.execute("SELECT * FROM nowhere")
        except Exception as error:  # noqa: BLE001 - the driver's own error
            wrapped = sqlalchemy_internals.dbapi_error(engine.dialect, "SELECT", error)
            assert isinstance(wrapped, sa_exc.OperationalError), _SQLALCHEMY_CHECK
            assert wrapped.hide_parameters is True
    finally:
        engine.dispose()


def test_sqlalchemy_compiled_statements_give_what_prepared_statements_read() -> None:
    dialect = postgresql.dialect()
    numbered = sqlalchemy_internals.numeric_dollar(dialect)
    statement = insert(_table).values(id=bindparam("id"), at=bindparam("at")).returning(_table.c.at)
    compiled = statement.compile(dialect=numbered)
    assert "$1" in compiled.string and numbered.positional, (
        f"a copied dialect no longer writes $n placeholders. {_SQLALCHEMY_CHECK}"
    )
    assert set(compiled.positiontup or ()) == {"id", "at", "name"}, (
        f"SQLCompiler.positiontup no longer names the binds in order. {_SQLALCHEMY_CHECK}"
    )
    for attribute in ("binds", "escaped_bind_names", "insert_prefetch", "update_prefetch"):
        assert hasattr(compiled, attribute), f"SQLCompiler.{attribute} is gone. {_SQLALCHEMY_CHECK}"
    assert [c.key for c in compiled.insert_prefetch] == ["name"], (
        f"insert_prefetch no longer lists Python-side defaults. {_SQLALCHEMY_CHECK}"
    )
    processors = sqlalchemy_internals.bind_processors(compiled)
    assert "at" in processors, f"the compiler's bind processors changed. {_SQLALCHEMY_CHECK}"
    assert [c.key for c in sqlalchemy_internals.returning_columns(statement)] == ["at"], (
        f"a statement's RETURNING columns are no longer where they were. {_SQLALCHEMY_CHECK}"
    )
    assert sqlalchemy_internals.returning_columns(select(_table.c.id)) == ()
    sqlite = create_engine("sqlite://").dialect
    assert sqlalchemy_internals.result_processor(UTCDateTime(), sqlite) is not None
    assert sqlalchemy_internals.result_processor(Integer(), sqlite) is None


def test_sqlalchemy_listener_lists_follow_listeners_as_they_come_and_go() -> None:
    factory = sessionmaker(class_=Session)
    (lists,) = sqlalchemy_internals.class_listener_lists(factory.class_, ["after_commit"])
    assert not lists

    def heard(session: Session) -> None:
        pass

    for target in (factory, Session):
        event.listen(target, "after_commit", heard)
        try:
            assert list(lists) == [heard], (
                f"the per-class listener list no longer follows listen(). {_SQLALCHEMY_CHECK}"
            )
        finally:
            event.remove(target, "after_commit", heard)
        assert not lists, (
            f"the per-class listener list no longer follows remove(). {_SQLALCHEMY_CHECK}"
        )
    session = factory()
    assert sqlalchemy_internals.has_own_dispatch(session) is False
    event.listen(session, "after_commit", heard)
    assert sqlalchemy_internals.has_own_dispatch(session) is True, (
        f"a session's own listeners are no longer in its own dispatch. {_SQLALCHEMY_CHECK}"
    )
    assert not lists, "a session's own listener went into its class's list"
