"""The part of the service's rate limiter reputation uses. agent_broker.http.rate_limits
provides it; this package names only what it needs instead of reaching up into HTTP."""

from __future__ import annotations

from typing import Protocol


class Limiter(Protocol):
    def hit(self, name: str, limit: str, *identifiers: str) -> None: ...
