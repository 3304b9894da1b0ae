"""Every use the service makes of FastAPI below its public API, in one place.

The planned handler (agent_broker.http.handler, planned_params) runs a route's request with
FastAPI's own pieces, so that everything a client sees stays FastAPI's: its dependency
classification and cache keys, its parameter and body validation, its response
serialisation and the context its errors name. Laying routes out flat (agent_broker.http.
routing) reads how FastAPI keeps an included router. The auth seam reads the
Authorization header with FastAPI's parser. None of these is public API: each is named
here, under a name of its own where FastAPI's starts with an underscore, written for
FastAPI WRITTEN_FOR (the pin in pyproject.toml). tests/test_framework_internals.py fails
when the installed version differs or a name used here has changed shape, and says what
to check.

The attributes of APIRoute and Dependant the planned handler reads (dependant,
body_field, response_field, the Dependant's parameter lists...) are checked by the same
test."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from fastapi import params
from fastapi._compat import field_annotation_is_sequence
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.models import _get_cache_key as dependency_cache_key
from fastapi.dependencies.models import _is_async_gen_callable as is_async_gen_callable
from fastapi.dependencies.models import _is_coroutine_callable as is_coroutine_callable
from fastapi.dependencies.models import _is_gen_callable as is_gen_callable
from fastapi.dependencies.utils import _get_param_aliases as param_aliases
from fastapi.dependencies.utils import _get_param_model as param_model
from fastapi.dependencies.utils import _is_json_field as is_json_field
from fastapi.dependencies.utils import _validate_value_with_model_field as validate_param
from fastapi.dependencies.utils import request_body_to_args, request_params_to_args
from fastapi.routing import APIRoute, iter_route_contexts, serialize_response
from fastapi.routing import _extract_endpoint_context as endpoint_context_of
from fastapi.security.utils import get_authorization_scheme_param
from fastapi.utils import is_body_allowed_for_status_code
from starlette.routing import BaseRoute

WRITTEN_FOR = "0.163.2"

# The parameter classes FastAPI's Query(), Header(), Body(), Form()... make.
Param = params.Param
Form = params.Form


def embeds_body_fields(route: APIRoute) -> bool:
    """Whether the route's body parameters are read as fields of one JSON object (several
    body parameters, or one declared with embed=True), as FastAPI worked it out."""
    return bool(route._embed_body_fields)


def included_router(route: BaseRoute) -> tuple[Any, Any] | None:
    """For an entry FastAPI's include_router put in a route list: the router it stands for
    and the context of its inclusion (prefix, dependencies...); None for a route."""
    original = getattr(route, "original_router", None)
    if original is None:
        return None
    return original, route.include_context  # type: ignore[attr-defined]


def served_routes(routes: Sequence[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes a route list serves, those of included routers in their place (as
    declared: their paths are their own, since the service includes routers without a
    prefix)."""
    for context in iter_route_contexts(routes):
        yield context.original_route


__all__ = [
    "WRITTEN_FOR",
    "DefaultPlaceholder",
    "Dependant",
    "Form",
    "Param",
    "dependency_cache_key",
    "embeds_body_fields",
    "endpoint_context_of",
    "field_annotation_is_sequence",
    "get_authorization_scheme_param",
    "included_router",
    "is_async_gen_callable",
    "is_body_allowed_for_status_code",
    "is_coroutine_callable",
    "is_gen_callable",
    "is_json_field",
    "param_aliases",
    "param_model",
    "request_body_to_args",
    "request_params_to_args",
    "serialize_response",
    "served_routes",
    "validate_param",
]
