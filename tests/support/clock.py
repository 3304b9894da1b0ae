"""A clock a test moves by hand, for the rate limiter (agent_broker/http/rate_limits.py:
RateLimiter takes a clock), so a window lapses or a back-off ends without sleeping."""

from __future__ import annotations

import time

from fastapi import FastAPI

from agent_broker.http.rate_limits import RateLimiter


class ManualClock:
    """Starts at the real time and moves only when told to."""

    def __init__(self) -> None:
        self._time = time.time()
        self._monotonic = time.monotonic()

    def time(self) -> float:
        return self._time

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        self._time += seconds
        self._monotonic += seconds


def limit_on(app: FastAPI, clock: ManualClock) -> None:
    """Give the app a rate limiter that reads `clock` (built before any request counts)."""
    app.state.rate_limiter = RateLimiter(app.state.settings, clock=clock)
