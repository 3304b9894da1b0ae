"""Rate limits on the `limits` library: in memory by default, shared through Redis when
BROKER_REDIS_URL is set so several workers count together."""

from __future__ import annotations

import math
import time

import structlog
from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from agent_broker.config import Settings
from agent_broker.problems import RateLimited

log = structlog.get_logger("agent_broker.rate_limits")


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        uri = settings.redis_url or "memory://"
        self._storage = storage_from_string(uri)
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._items: dict[str, RateLimitItem] = {}

    def _item(self, limit: str) -> RateLimitItem:
        item = self._items.get(limit)
        if item is None:
            item = self._items[limit] = parse(limit)
        return item

    def hit(self, name: str, limit: str, *identifiers: str) -> None:
        """Count one event; raise 429 rate_limited with Retry-After when over the limit.

        If the shared store is unreachable the request is let through and the fault
        logged: a rate limit is a brake, not a reason to refuse service."""
        item = self._item(limit)
        try:
            if self._limiter.hit(item, name, *identifiers):
                return
            stats = self._limiter.get_window_stats(item, name, *identifiers)
        except Exception as exc:  # noqa: BLE001 - any storage failure fails open
            log.warning("rate_limit_store_unavailable", limit=name, error_type=type(exc).__name__)
            return
        raise RateLimited(math.ceil(max(1.0, stats.reset_time - time.time())))

    def exhausted(self, name: str, limit: str, *identifiers: str) -> bool:
        """Whether the budget is spent, without counting anything (fails open)."""
        try:
            return not self._limiter.test(self._item(limit), name, *identifiers)
        except Exception as exc:  # noqa: BLE001
            log.warning("rate_limit_store_unavailable", limit=name, error_type=type(exc).__name__)
            return False

    def record(self, name: str, limit: str, *identifiers: str) -> None:
        """Count one event without refusing anything (fails open)."""
        try:
            self._limiter.hit(self._item(limit), name, *identifiers)
        except Exception as exc:  # noqa: BLE001
            log.warning("rate_limit_store_unavailable", limit=name, error_type=type(exc).__name__)

    def reset(self) -> None:
        self._storage.reset()
