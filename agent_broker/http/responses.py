"""OpenAPI declarations of responses: the string formats and optional fields the response
models share, the problem documents a route can answer, and the post-processing of the
document FastAPI builds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from http import HTTPStatus
from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema

from agent_broker.problems import PROBLEM_MEDIA_TYPE, Reason

# Strings whose format the document declares. Only the schema changes: the values are
# served exactly as the views render them (RFC 3339 timestamps end in Z).
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
Day = Annotated[str, WithJsonSchema({"type": "string", "format": "date"})]
Uuid = Annotated[str, WithJsonSchema({"type": "string", "format": "uuid"})]
Email = Annotated[str, WithJsonSchema({"type": "string", "format": "email"})]
Uri = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]
UriReference = Annotated[str, WithJsonSchema({"type": "string", "format": "uri-reference"})]
Handle = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "pattern": "^[0-9a-f]{12}$",
            "description": "Public handle: 12 lowercase hex characters",
        }
    ),
]

# route_protocol_binding: JSONRPC, HTTP+JSON or {bindings_base}/webhook-v1. The third
# value depends on the deployment's settings, so the models declare this pattern and
# with_protocol_bindings() replaces it by the exact values of the app serving the document.
PROTOCOL_BINDING_PATTERN = r"^(JSONRPC|HTTP\+JSON|https?://\S+/webhook-v1)$"
ProtocolBinding = Annotated[
    str, WithJsonSchema({"type": "string", "pattern": PROTOCOL_BINDING_PATTERN})
]


def _is_none(value: object) -> bool:
    return value is None


def _not_nullable(schema: dict[str, Any]) -> None:
    branches = schema.pop("anyOf", None)
    if branches is not None:
        kept = [branch for branch in branches if branch != {"type": "null"}]
        if len(kept) == 1:
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept
    if "default" in schema and schema["default"] is None:
        del schema["default"]


def omitted_when_unset(**kwargs: Any) -> Any:
    """An optional response field: absent from the body when it has no value, never null.
    The schema declares it as not required and not nullable."""
    return Field(default=None, exclude_if=_is_none, json_schema_extra=_not_nullable, **kwargs)


class ProblemError(BaseModel):
    field: str
    message: str


class ProblemNextStep(BaseModel):
    action: str
    method: str
    path: str


class ProblemDetail(BaseModel):
    """RFC 9457 problem document (docs/interface.md §3.1); some problems add members."""

    type: Uri = Field(description="URL-style identifier of the problem, ending in the reason")
    title: str = Field(description="HTTP status text")
    status: int
    detail: str
    reason: Reason
    retryAfterSeconds: int | None = omitted_when_unset(
        description="Present on 429 rate_limited; same value as the Retry-After header"
    )
    errors: list[ProblemError] | None = omitted_when_unset(
        description="400 invalid_input: the fields refused"
    )
    missing: list[str] | None = omitted_when_unset(
        description="428 profile_incomplete_*: the profile's missing fields (never the "
        "counterparty's)"
    )
    blocked_actions: list[str] | None = omitted_when_unset(
        description="428 profile_incomplete_*: what stays blocked until the profile is complete"
    )
    next: list[ProblemNextStep] | None = omitted_when_unset(
        description="428 profile_incomplete_*: the requests that complete the profile"
    )


_PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/ProblemDetail"}}}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    # Problem documents are served as application/problem+json only; the ProblemDetail
    # component is added to the document by without_framework_422().
    return {
        status: {"description": HTTPStatus(status).phrase, "content": _PROBLEM_CONTENT}
        for status in statuses
    }


_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


def _problem_components() -> dict[str, Any]:
    schema = ProblemDetail.model_json_schema(ref_template="#/components/schemas/{model}")
    components = schema.pop("$defs", {})
    components["ProblemDetail"] = schema
    return components


def without_framework_422(schema: dict[str, Any]) -> dict[str, Any]:
    """Request validation answers 400 invalid_input here (docs/interface.md §3.2), never FastAPI's
    422: replace the 422 FastAPI declares on every operation with parameters by that 400."""
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
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    if "HTTPValidationError" not in str(schema.get("paths", {})):
        for name in _VALIDATION_SCHEMAS:
            components.pop(name, None)
    for name, component in _problem_components().items():
        components.setdefault(name, component)
    return schema


def _ref(response: dict[str, Any]) -> str | None:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return schema.get("$ref") if set(schema) == {"$ref"} else None


def with_success_shapes_apart(schema: dict[str, Any]) -> dict[str, Any]:
    """A route whose response model is a union of shapes, each answered with a status of
    its own (registration: 201 created, 200 replayed), declares every shape but the
    route's own status under `responses`; the route's status then lists only the shapes
    no other success status declares."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            successes = {
                status: response
                for status, response in operation.get("responses", {}).items()
                if status.startswith("2")
            }
            declared_elsewhere = {_ref(response) for response in successes.values()} - {None}
            for response in successes.values():
                content = response.get("content", {}).get("application/json", {})
                branches = content.get("schema", {}).get("anyOf")
                if not branches or any(set(branch) != {"$ref"} for branch in branches):
                    continue
                kept = [b for b in branches if b["$ref"] not in declared_elsewhere]
                if len(kept) == 1:
                    content["schema"] = kept[0]
                elif kept and len(kept) < len(branches):
                    content["schema"] = {"anyOf": kept}
    return schema


def _subschemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _subschemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _subschemas(value)


def with_protocol_bindings(schema: dict[str, Any], bindings: Sequence[str]) -> dict[str, Any]:
    """Declare route_protocol_binding (and a reveal's protocolBinding) as the enumeration of
    the values this deployment accepts, in place of the generic pattern."""
    for node in _subschemas(schema):
        if node.get("pattern") == PROTOCOL_BINDING_PATTERN and node.get("type") == "string":
            del node["pattern"]
            node["enum"] = list(bindings)
    return schema


def with_body_limits(schema: dict[str, Any]) -> dict[str, Any]:
    """Every operation that takes a body can meet the body guard (agent_broker.http.body):
    413 for a body over the size limit, 408 for one that did not arrive in time."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                responses = operation.setdefault("responses", {})
                for status, declared in problems(408, 413).items():
                    responses.setdefault(str(status), declared)
    return schema


PAYMENT_CHALLENGE = (
    "Insufficient credits. With no credential at all, the x402 payment challenge: the "
    "offers in accepts[] (x402 v1) and in the base64 PAYMENT-REQUIRED header (v2). Pay "
    "with X-PAYMENT or PAYMENT-SIGNATURE; a wallet's first payment opens an account and "
    "returns its API key once, in the answer's new_account member."
)


def with_payment_challenges(
    schema: dict[str, Any], payable: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """Declare 402, the payment challenge, on each payable operation, and 429: payment
    attempts are rate limited."""
    for method, path in payable:
        responses = schema["paths"][path][method.lower()].setdefault("responses", {})
        for status, declared in problems(429).items():
            responses.setdefault(str(status), declared)
        responses["402"] = {
            "description": PAYMENT_CHALLENGE,
            "headers": {
                "PAYMENT-REQUIRED": {
                    "description": "base64 JSON of the x402 v2 PaymentRequired",
                    "schema": {"type": "string"},
                }
            },
            "content": _PROBLEM_CONTENT,
        }
    return schema


def with_security(
    schema: dict[str, Any],
    schemes: Mapping[str, dict[str, Any]],
    requirements: Mapping[tuple[str, str], Sequence[str]],
) -> dict[str, Any]:
    """The credentials each operation takes, as (path, method) -> scheme names: the auth
    seam reads them from the request itself, so FastAPI does not see them to list them."""
    used: set[str] = set()
    for (path, method), names in requirements.items():
        operation = schema.get("paths", {}).get(path, {}).get(method)
        if operation is not None and names:
            operation["security"] = [{name: []} for name in names]
            used.update(names)
    if used:
        components = schema.setdefault("components", {})
        components["securitySchemes"] = {name: schemes[name] for name in schemes if name in used}
    return schema


def finish_document(
    schema: dict[str, Any],
    *,
    protocol_bindings: Sequence[str],
    payable: Sequence[tuple[str, str]] = (),
    security: Mapping[tuple[str, str], Sequence[str]] | None = None,
    security_schemes: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The post-processing of the document FastAPI builds for one app."""
    schema = with_security(schema, security_schemes or {}, security or {})
    schema = with_payment_challenges(schema, payable)
    schema = without_framework_422(schema)
    schema = with_success_shapes_apart(schema)
    schema = with_body_limits(schema)
    return with_protocol_bindings(schema, protocol_bindings)
