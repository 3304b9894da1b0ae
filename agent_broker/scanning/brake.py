"""The abuse brake: an account whose texts keep tripping the scanner is refused for a
while (429 too_many_violations) before anything is scanned again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from agent_broker.config import Settings
from agent_broker.problems import Problem, Reason
from agent_broker.scanning.errors import ContactLeak, PromptInjection
from agent_broker.scanning.service import ensure_clean

BRAKE = "scanner_violations"
# What services receive: scan these named texts or raise (bound to the caller by the route).
Screen = Callable[[Mapping[str, str]], None]


class ViolationCounter(Protocol):
    """What the brake needs of the service's rate limiter (agent_broker.http.rate_limits
    provides it); the scanner names it rather than reach up into the HTTP layer."""

    def exhausted(self, name: str, limit: str, *identifiers: str) -> bool: ...

    def record(self, name: str, limit: str, *identifiers: str) -> None: ...


class TooManyViolations(Problem):
    # No Retry-After on purpose: it is an abuse brake, not a rate limit to be timed.
    status, reason = 429, Reason.too_many_violations
    default_detail = (
        "Too many texts from this account were refused for contact details or prompt "
        "injection; try again later."
    )


def screen_for(limiter: ViolationCounter, settings: Settings, account_id: str) -> Screen:
    return lambda fields: screen(limiter, settings, account_id, fields)


def screen(
    limiter: ViolationCounter, settings: Settings, account_id: str, fields: Mapping[str, str]
) -> None:
    """ensure_clean, counting each refusal against the account."""
    if limiter.exhausted(BRAKE, settings.violation_limit, account_id):
        raise TooManyViolations()
    try:
        ensure_clean(fields)
    except (ContactLeak, PromptInjection):
        limiter.record(BRAKE, settings.violation_limit, account_id)
        raise
