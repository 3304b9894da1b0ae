"""A clock a test moves by hand, for the rate limiter (agent_broker/http/rate_limits.py:
RateLimiter takes a clock), so a window lapses or a back-off ends without sleeping."""

from __future__ import annotations

import time
from dataclasses import replace

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
    """Give the app a rate limiter that reads `clock` (built before any request counts).
    REST routes read the context per request, so they see the new one (MCP tools keep the
    context they were built with)."""
    context = app.state.context
    app.state.context = replace(context, rate_limiter=RateLimiter(context.settings, clock=clock))
