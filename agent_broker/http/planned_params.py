"""A route's path, query, header and cookie parameters, read as FastAPI reads them, with
what FastAPI works out per field on every request (is it a parameter model, which names
it answers to, is it a list) worked out once when the route is planned.

FastAPI's request_params_to_args asks each field's annotation those questions anew for
every request; for the feed's six query parameters that was most of the parameters' cost.
The values are then validated by FastAPI's own function, so defaults, errors and their
locations are FastAPI's. A group with a parameter model keeps FastAPI's function."""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticUndefined as Undefined
from starlette.requests import Request

from agent_broker.http.fastapi_internals import (
    Param,
    field_annotation_is_sequence,
    is_json_field,
    param_aliases,
    param_model,
    request_params_to_args,
    validate_param,
)

# Where each kind of parameter comes from, and whether the source holds several values
# per name (a multidict, where a list parameter takes them all).
_SOURCES = {
    "path": ("path_params", False),
    "query": ("query_params", True),
    "header": ("headers", True),
    "cookie": ("cookies", False),
}


class _Field:
    __slots__ = ("field", "name", "keys", "location", "takes_all", "is_sequence")

    def __init__(self, field: Any, multidict: bool) -> None:
        info = field.field_info
        assert isinstance(info, Param), "Params must be subclasses of Param"
        sequence = field_annotation_is_sequence(info.annotation)
        self.field = field
        self.name = field.name
        self.keys = [key for _validation, key in param_aliases(field)]
        self.location = info.in_.value
        self.takes_all = multidict and sequence and not is_json_field(field)
        self.is_sequence = sequence


class ParamGroup:
    """The fields of one kind (path, query, header or cookie) of one dependant."""

    __slots__ = ("fields", "source", "_planned")

    def __init__(self, kind: str, fields: list[Any]) -> None:
        self.source, multidict = _SOURCES[kind]
        self.fields = fields
        if any(param_model(field) is not None for field in fields):
            self._planned: list[_Field] | None = None  # FastAPI's function reads it
        else:
            self._planned = [_Field(field, multidict) for field in fields]

    def read(self, request: Request) -> tuple[dict[str, Any], list[Any]]:
        received = getattr(request, self.source)
        if self._planned is None:
            return request_params_to_args(self.fields, received)
        values: dict[str, Any] = {}
        errors: list[Any] = []
        for planned in self._planned:
            keys = planned.keys
            key = next((k for k in keys if k in received), keys[0])
            value = received.getlist(key) if planned.takes_all else received.get(key, None)
            if value is None or (planned.is_sequence and len(value) == 0):
                value = Undefined  # defaults apply in validation, as FastAPI does
            found, failed = validate_param(
                field=planned.field, value=value, values=values, loc=(planned.location, key)
            )
            if failed:
                errors.extend(failed)
            else:
                values[planned.name] = found
        return values, errors
