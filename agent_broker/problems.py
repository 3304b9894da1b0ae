"""RFC 9457 problem documents: the reason codes of docs/interface.md §3, one exception tree,
and the handlers that render every error as application/problem+json."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from agent_broker.config import Settings
from agent_broker.db import outages

PROBLEM_MEDIA_TYPE = "application/problem+json"
log = structlog.get_logger("agent_broker.problems")


class Reason(StrEnum):
    unauthorized = "unauthorized"
    insufficient_funds_self = "insufficient_funds_self"
    held_funds_mismatch = "held_funds_mismatch"
    forbidden = "forbidden"
    api_key_disabled = "api_key_disabled"
    not_found = "not_found"
    identity_conflict = "identity_conflict"
    out_of_turn = "out_of_turn"
    already_finalized = "already_finalized"
    duplicate_rating = "duplicate_rating"
    duplicate_dispute = "duplicate_dispute"
    idempotency_key_reuse = "idempotency_key_reuse"
    self_listing_negotiation = "self_listing_negotiation"
    hold_not_capturable = "hold_not_capturable"
    missing_deal_route_self = "missing_deal_route_self"
    missing_deal_route_counterparty = "missing_deal_route_counterparty"
    account_has_escrow = "account_has_escrow"
    listing_conflict = "listing_conflict"
    invoice_already_consumed = "invoice_already_consumed"
    invoice_conflict = "invoice_conflict"
    x402_payment_replay = "x402_payment_replay"
    oauth_token_replay = "oauth_token_replay"
    listing_cap_reached = "listing_cap_reached"
    grant_cap_reached = "grant_cap_reached"
    listing_expired = "listing_expired"
    thread_auto_closed = "thread_auto_closed"
    deal_purged = "deal_purged"
    contact_leak = "contact_leak"
    prompt_injection = "prompt_injection"
    invalid_input = "invalid_input"
    terms_required = "terms_required"
    profile_incomplete_self = "profile_incomplete_self"
    profile_incomplete_counterparty = "profile_incomplete_counterparty"
    too_many_violations = "too_many_violations"
    rate_limited = "rate_limited"
    a2a_version_not_supported = "a2a_version_not_supported"
    internal_error = "internal_error"
    processor_unavailable = "processor_unavailable"
    # Used by certification though absent from the section 7 enumeration.
    certification_domain_unverified = "certification_domain_unverified"
    certification_unfunded = "certification_unfunded"
    certification_test_required = "certification_test_required"


class Problem(Exception):
    """An error answered as a problem document. Subclasses fix status and reason."""

    status: int = 500
    reason: Reason = Reason.internal_error
    default_detail: str = "The request could not be completed."

    def __init__(
        self,
        detail: str | None = None,
        *,
        status: int | None = None,
        reason: Reason | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if status is not None:
            self.status = status
        if reason is not None:
            self.reason = reason
        self.detail = detail or self.default_detail
        self.extra = extra or {}
        self.headers = headers or {}
        super().__init__(self.detail)


class InvalidInput(Problem):
    status, reason = 400, Reason.invalid_input
    default_detail = "The request is not valid."


class Unauthorized(Problem):
    status, reason = 401, Reason.unauthorized
    default_detail = "A valid API key is required in the x-api-key header."


class InsufficientFundsSelf(Problem):
    status, reason = 402, Reason.insufficient_funds_self
    default_detail = "Your balance cannot cover this charge; nothing was charged."


class Forbidden(Problem):
    status, reason = 403, Reason.forbidden
    default_detail = "You may not perform this action."


class ApiKeyDisabled(Problem):
    status, reason = 403, Reason.api_key_disabled
    default_detail = (
        "This API key has been disabled; rotate it from the dashboard with a session, "
        "or ask the service's operator for a new key."
    )


class NotFound(Problem):
    status, reason = 404, Reason.not_found
    default_detail = "No such resource."


class IdentityConflict(Problem):
    status, reason = 409, Reason.identity_conflict
    default_detail = "This conflicts with an identity already recorded."


class IdempotencyKeyReuse(Problem):
    status, reason = 409, Reason.idempotency_key_reuse
    default_detail = "This Idempotency-Key was already used with a different request."


class TermsRequired(Problem):
    status, reason = 428, Reason.terms_required
    default_detail = "Registration requires accepted_terms: true."


class RateLimited(Problem):
    status, reason = 429, Reason.rate_limited
    default_detail = "Too many requests; retry after the indicated delay."

    def __init__(self, retry_after_seconds: int, detail: str | None = None) -> None:
        seconds = max(1, int(retry_after_seconds))
        super().__init__(
            detail,
            extra={"retryAfterSeconds": seconds},
            headers={"Retry-After": str(seconds)},
        )


class InternalError(Problem):
    status, reason = 500, Reason.internal_error
    default_detail = (
        "An internal error occurred; it is safe to retry with the same Idempotency-Key."
    )


class DatabaseTimedOut(Problem):
    """A database wait ran out (agent_broker.db.timeouts): the transaction was rolled back.
    A load or a lock that passes, so 503 with a Retry-After, under the generic reason."""

    status, reason = 503, Reason.internal_error
    default_detail = (
        "The database did not answer in time; retry after the indicated delay (with the "
        "same Idempotency-Key where the route takes one)."
    )
    RETRY_AFTER_SECONDS = 1

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"Retry-After": str(self.RETRY_AFTER_SECONDS)})


class DatabaseUnreachable(DatabaseTimedOut):
    """The database refused or lost the request's connection (a restart, a failover, a
    network cut; agent_broker.db.outages). Its transaction was rolled back, unless the
    connection was lost during the commit itself: either way a retry with the same
    Idempotency-Key lands once. 503 under the generic reason (docs/decisions/outages.md)."""

    default_detail = (
        "The database is unreachable for the moment. Retry after the indicated delay, with "
        "the same Idempotency-Key where the route takes one: the request then lands once."
    )
    # A fast restart of PostgreSQL takes a few seconds.
    RETRY_AFTER_SECONDS = 2


# What a request answers when the database is out of reach or slow, by cause.
UNAVAILABLE: dict[str, type[DatabaseTimedOut]] = {
    outages.DATABASE_TIMEOUT: DatabaseTimedOut,
    outages.DATABASE_UNREACHABLE: DatabaseUnreachable,
}


def problem_type(base_url: str, reason: str) -> str:
    return f"{base_url.rstrip('/')}/problems/{reason}"


def _title(status: int) -> str:
    # The status text, except 402, whose problems all say what ran out.
    return "Insufficient credits" if status == 402 else HTTPStatus(status).phrase


def problem_body(
    base_url: str, status: int, reason: str, detail: str, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": problem_type(base_url, reason),
        "title": _title(status),
        "status": status,
        "detail": detail,
        "reason": reason,
    }
    body.update(extra or {})
    return body


def problem_response(
    base: str,
    status: int,
    reason: str,
    detail: str,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        problem_body(base, status, reason, detail, extra),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def _field_path(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def _validation_detail(exc: RequestValidationError) -> tuple[str, list[dict[str, str]]]:
    errors = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            return "The request body is not valid JSON.", [
                {"field": "body", "message": "invalid JSON"}
            ]
        errors.append(
            {"field": _field_path(tuple(err.get("loc", ()))), "message": err.get("msg", "")}
        )
    if not errors:
        return "The request is not valid.", []
    first = errors[0]
    return f"Invalid field '{first['field']}': {first['message']}.", errors


def install_handlers(
    app: FastAPI, settings: Settings, *, on_unavailable: Callable[[str], None] | None = None
) -> None:
    """The problem handlers; `on_unavailable` is told the cause of every 503 a database
    outage or timeout answers (agent_broker.db.outages: the metrics count them)."""
    base = settings.public_base_url

    def unavailable(request: Request, exc: BaseException, cause: str) -> JSONResponse:
        err = UNAVAILABLE[cause]()
        orig = getattr(exc, "orig", None) or exc
        log.warning(
            "database_unavailable",
            path=request.url.path,
            cause=cause,
            error_type=type(orig).__name__,
        )
        if on_unavailable is not None:
            on_unavailable(cause)
        return problem_response(
            base, err.status, err.reason.value, err.detail, err.extra, err.headers
        )

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> JSONResponse:
        return problem_response(
            base, exc.status, exc.reason.value, exc.detail, exc.extra, exc.headers
        )

    @app.exception_handler(OperationalError)
    async def _database(request: Request, exc: OperationalError) -> JSONResponse:
        cause = outages.cause(exc)
        if cause is None:
            raise exc  # a server fault: answered 500 by the handler below, and logged
        return unavailable(request, exc, cause)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail, errors = _validation_detail(exc)
        return problem_response(base, 400, Reason.invalid_input, detail, {"errors": errors})

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return problem_response(base, 404, Reason.not_found, "No such resource.")
        if exc.status_code == 405:
            return problem_response(
                base,
                405,
                Reason.invalid_input,
                f"Method {request.method} is not allowed on this path.",
                headers=dict(exc.headers or {}),
            )
        reason = Reason.internal_error if exc.status_code >= 500 else Reason.invalid_input
        return problem_response(base, exc.status_code, reason, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # An outage met outside a route (a middleware's own database work) is one still.
        cause = outages.cause(exc)
        if cause is not None:
            return unavailable(request, exc, cause)
        log.error("unhandled_exception", path=request.url.path, error_type=type(exc).__name__)
        err = InternalError()
        return problem_response(base, err.status, err.reason.value, err.detail)


# Sealing needs both deal routes; a domain proof asks for one too (domains/proof.py).
class MissingDealRouteSelf(Problem):
    status, reason = 409, Reason.missing_deal_route_self
    default_detail = "Declare your deal route (PUT /v1/account/route) before sealing."


class MissingDealRouteCounterparty(Problem):
    status, reason = 409, Reason.missing_deal_route_counterparty
    default_detail = "The other party has no deal route declared, so the deal cannot seal."
