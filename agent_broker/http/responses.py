"""OpenAPI declarations of the problem documents a route can answer."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from pydantic import BaseModel, Field

from agent_broker.problems import PROBLEM_MEDIA_TYPE


class ProblemDetail(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    reason: str
    retryAfterSeconds: int | None = Field(default=None, description="Present on 429")


_PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemDetail"}}}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    # Problem documents are served as application/problem+json only; the ProblemDetail
    # component is added to the document by without_framework_422().
    return {
        status: {"description": HTTPStatus(status).phrase, "content": _PROBLEM_CONTENT}
        for status in statuses
    }


_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


def without_framework_422(schema: dict[str, Any]) -> dict[str, Any]:
    """Request validation answers 400 invalid_input here (SPEC.md 7), never FastAPI's 422:
    replace the 422 FastAPI declares on every operation with parameters by that 400."""
    bad_request = {
        "description": HTTPStatus.BAD_REQUEST.phrase,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemDetail"}}},
    }
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            declared = str(responses.get("422", {}))
            if "HTTPValidationError" in declared:
                del responses["422"]
                responses.setdefault("400", bad_request)
    components = schema.get("components", {}).get("schemas", {})
    if "HTTPValidationError" not in str(schema.get("paths", {})):
        for name in _VALIDATION_SCHEMAS:
            components.pop(name, None)
    components.setdefault("ProblemDetail", ProblemDetail.model_json_schema())
    return schema
