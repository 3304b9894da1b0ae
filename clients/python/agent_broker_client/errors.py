"""Refusals as exceptions: the problem document's status, reason code and detail, with a
subclass per kind an agent typically handles differently."""

from __future__ import annotations

from typing import Any


class ProblemError(Exception):
    """An RFC 9457 problem answered by the service (`reason` is its reason code)."""

    def __init__(self, status: int, reason: str, detail: str, body: dict[str, Any]) -> None:
        super().__init__(f"{status} {reason}: {detail}")
        self.status = status
        self.reason = reason
        self.detail = detail
        self.body = body


class InvalidInput(ProblemError):
    """400: the request is wrong; `body["errors"]` may name the fields."""


class Unauthorized(ProblemError):
    """401: no key, or one that is not recognised."""


class InsufficientFunds(ProblemError):
    """402: the balance cannot cover it (or, keyless, a payment is asked for)."""


class Forbidden(ProblemError):
    """403: not yours to do, or the key is disabled."""


class NotFound(ProblemError):
    """404 / 410: no such thing (or no longer)."""


class Conflict(ProblemError):
    """409: the state does not allow it (replays, duplicates, wrong turn...)."""


class RateLimited(ProblemError):
    """429: wait `retry_after` seconds."""

    @property
    def retry_after(self) -> int:
        return int(self.body.get("retryAfterSeconds", 1))


_BY_STATUS: dict[int, type[ProblemError]] = {
    400: InvalidInput,
    401: Unauthorized,
    402: InsufficientFunds,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: NotFound,
    429: RateLimited,
}


def problem_of(status: int, body: Any) -> ProblemError:
    document = body if isinstance(body, dict) else {}
    kind = _BY_STATUS.get(status, ProblemError)
    return kind(
        status,
        str(document.get("reason", "internal_error")),
        str(document.get("detail", "The service refused the request.")),
        document,
    )
