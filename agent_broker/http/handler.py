"""A route's request handler, planned once instead of worked out on every request.

FastAPI's handler walks a route's dependency tree anew for every request: it classifies
each callable, builds each dependency's cache key, reads the query string and the cookies
of routes that take neither, parses the content type with the email package, and opens
two exit stacks for dependencies with yield. On a cheap write that was about a sixth of
its CPU. The tree does not change after startup, so here it is planned when the route is
built, and each request only runs the plan.

The plan keeps FastAPI's order and its own pieces for everything a client can see: the
dependencies are solved depth first with FastAPI's cache keys; the path, query, header
and cookie parameters (agent_broker.http.planned_params) and the body are validated by
FastAPI's functions; errors become the same RequestValidationError; and the result goes
through FastAPI's response serialisation. A route using anything the plan does not cover
(dependencies with yield, background tasks, security scopes, streaming, form bodies,
concurrency limits) keeps FastAPI's handler, and so does a request made while the
route's dependency overrides are set."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic_core import PydanticUndefined as Undefined
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agent_broker.http.fastapi_internals import (
    DefaultPlaceholder,
    Dependant,
    Form,
    dependency_cache_key,
    embeds_body_fields,
    endpoint_context_of,
    is_async_gen_callable,
    is_body_allowed_for_status_code,
    is_coroutine_callable,
    is_gen_callable,
    request_body_to_args,
    serialize_response,
)
from agent_broker.http.planned_params import ParamGroup

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class Unplanned(Exception):
    """The route uses something the plan does not cover: FastAPI's handler serves it."""


@dataclass(frozen=True, slots=True)
class _Step:
    """One dependant of the tree: its own dependencies first, then its parameters."""

    call: Callable[..., Any]
    name: str | None
    cache_key: Any
    use_cache: bool
    is_coroutine: bool
    subs: tuple[_Step, ...]
    params: tuple[ParamGroup, ...]  # the kinds it declares, in FastAPI's order
    body_params: list[Any]
    request_param_name: str | None
    http_connection_param_name: str | None
    response_param_name: str | None

    def takes_response(self) -> bool:
        return self.response_param_name is not None or any(s.takes_response() for s in self.subs)


def _plan(dependant: Dependant) -> _Step:
    call = dependant.call
    if call is None:
        raise Unplanned("a dependant without a callable")
    if is_gen_callable(call) or is_async_gen_callable(call):
        raise Unplanned("a dependency with yield")
    if (
        dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.websocket_param_name
        or dependant.concurrency is not None
    ):
        raise Unplanned("background tasks, security scopes, websockets or a concurrency limit")
    return _Step(
        call=call,
        name=dependant.name,
        cache_key=dependency_cache_key(dependant=dependant),
        use_cache=dependant.use_cache,
        is_coroutine=is_coroutine_callable(call),
        subs=tuple(_plan(sub) for sub in dependant.dependencies),
        # Only the kinds the dependant declares: reading the query string or the cookies
        # of a route that takes neither costs a parse for nothing.
        params=tuple(
            ParamGroup(kind, fields)
            for kind, fields in (
                ("path", dependant.path_params),
                ("query", dependant.query_params),
                ("header", dependant.header_params),
                ("cookie", dependant.cookie_params),
            )
            if fields
        ),
        body_params=dependant.body_params,
        request_param_name=dependant.request_param_name,
        http_connection_param_name=dependant.http_connection_param_name,
        response_param_name=dependant.response_param_name,
    )


class _Solved:
    __slots__ = ("cache", "response")

    def __init__(self, response: Response | None) -> None:
        self.cache: dict[Any, Any] = {}
        self.response = response


async def _solve(
    step: _Step, request: Request, body: Any, embed: bool, solved: _Solved
) -> tuple[dict[str, Any], list[Any]]:
    """FastAPI's solve_dependencies for a planned tree, in its order: each dependency's own
    dependencies are solved before its cache is consulted, and one that failed is skipped."""
    values: dict[str, Any] = {}
    errors: list[Any] = []
    cache = solved.cache
    for sub in step.subs:
        sub_values, sub_errors = await _solve(sub, request, body, embed, solved)
        if sub_errors:
            errors.extend(sub_errors)
            continue
        key = sub.cache_key
        if sub.use_cache and key in cache:
            value = cache[key]
        elif sub.is_coroutine:
            value = await sub.call(**sub_values)
        else:
            value = await run_in_threadpool(sub.call, **sub_values)
        if sub.name is not None:
            values[sub.name] = value
        if key not in cache:
            cache[key] = value
    for group in step.params:
        found, failed = group.read(request)
        values.update(found)
        errors += failed
    if step.body_params:
        found, failed = await request_body_to_args(
            body_fields=step.body_params, received_body=body, embed_body_fields=embed
        )
        values.update(found)
        errors.extend(failed)
    if step.http_connection_param_name:
        values[step.http_connection_param_name] = request
    if step.request_param_name:
        values[step.request_param_name] = request
    if step.response_param_name:
        values[step.response_param_name] = solved.response
    return values, errors


def is_json_content_type(value: str) -> bool:
    """What FastAPI decides with email.message.Message: the media type, lower-cased and
    without parameters, is application/json or application/*+json (a value that is not
    one type/subtype pair counts as text/plain)."""
    media_type = value.partition(";")[0].strip().lower()
    if media_type.count("/") != 1:
        return False
    main, subtype = media_type.split("/")
    return main == "application" and (subtype == "json" or subtype.endswith("+json"))


def _sub_response() -> Response:
    response = Response()
    del response.headers["content-length"]
    response.status_code = None  # type: ignore[assignment]
    return response


def planned_handler(route: APIRoute) -> Handler:
    """The route's handler, or Unplanned when FastAPI's must serve it."""
    if route.dependant.call is None or is_gen_callable(route.dependant.call):
        raise Unplanned("no endpoint, or a streaming one")
    if is_async_gen_callable(route.dependant.call) or route.stream_item_field is not None:
        raise Unplanned("a streaming endpoint")
    body_field = route.body_field
    if body_field is not None and isinstance(body_field.field_info, Form):
        raise Unplanned("a form body")
    response_class = route.response_class
    dump_json = route.response_field is not None and isinstance(response_class, DefaultPlaceholder)
    if isinstance(response_class, DefaultPlaceholder):
        response_class = response_class.value
    if issubclass(response_class, StreamingResponse):
        raise Unplanned("a streaming response class")
    strict = route.strict_content_type
    if isinstance(strict, DefaultPlaceholder):
        strict = strict.value
    root = _plan(route.dependant)
    takes_response = root.takes_response()
    embed = embeds_body_fields(route)
    status_code = route.status_code
    response_field = route.response_field
    serialising = {
        "include": route.response_model_include,
        "exclude": route.response_model_exclude,
        "by_alias": route.response_model_by_alias,
        "exclude_unset": route.response_model_exclude_unset,
        "exclude_defaults": route.response_model_exclude_defaults,
        "exclude_none": route.response_model_exclude_none,
    }
    call = root.call
    path = route.dependant.path

    # What FastAPI's errors name (source, function, "METHOD path"), made once per method
    # and mount rather than on every request that serialises a response.
    contexts: dict[tuple[str, str], Any] = {}

    def endpoint_context(request: Request) -> Any:
        mount_path = request.scope.get("root_path", "").rstrip("/")
        context = contexts.get((request.method, mount_path))
        if context is None:
            context = dict(endpoint_context_of(call))
            if path:
                context["path"] = f"{request.method} {mount_path}{path}"
            contexts[(request.method, mount_path)] = context
        return context

    async def read_body(request: Request) -> Any:
        if body_field is None:
            return Undefined
        try:
            raw = await request.body()
            if not raw:
                return Undefined
            content_type = request.headers.get("content-type")
            if not content_type:
                return await request.json() if not strict else raw
            return await request.json() if is_json_content_type(content_type) else raw
        except json.JSONDecodeError as error:
            raise RequestValidationError(
                [
                    {
                        "type": "json_invalid",
                        "loc": ("body", error.pos),
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": error.msg},
                    }
                ],
                body=error.doc,
                endpoint_ctx=endpoint_context(request),
            ) from error
        except HTTPException:
            raise
        except Exception as error:
            raise HTTPException(
                status_code=400, detail="There was an error parsing the body"
            ) from error

    async def handle(request: Request) -> Response:
        body = await read_body(request)
        solved = _Solved(_sub_response() if takes_response else None)
        values, errors = await _solve(root, request, body, embed, solved)
        if errors:
            raise RequestValidationError(
                errors,
                body=None if body is Undefined else body,
                endpoint_ctx=endpoint_context(request),
            )
        if root.is_coroutine:
            raw = await call(**values)
        else:
            raw = await run_in_threadpool(call, **values)
        if isinstance(raw, Response):
            return raw
        sub = solved.response
        arguments: dict[str, Any] = {"background": None}
        chosen = status_code if status_code else (sub.status_code if sub else None)
        if chosen is not None:
            arguments["status_code"] = chosen
        if sub is not None and sub.status_code:
            arguments["status_code"] = sub.status_code
        content = await serialize_response(
            field=response_field,
            response_content=raw,
            is_coroutine=root.is_coroutine,
            endpoint_ctx=endpoint_context(request) if response_field else None,
            dump_json=dump_json,
            **serialising,
        )
        if dump_json:
            response = Response(content=content, media_type="application/json", **arguments)
        else:
            response = response_class(content, **arguments)
        if not is_body_allowed_for_status_code(response.status_code):
            response.body = b""
        if sub is not None:
            response.headers.raw.extend(sub.headers.raw)
        return response

    return handle


__all__ = ["Handler", "Unplanned", "is_json_content_type", "planned_handler"]
