"""Rate limits on the `limits` library: in memory by default, shared through Redis when
BROKER_REDIS_URL is set so several workers count together.

When the shared store cannot be reached the checks fail open: the request goes through and
the fault is logged. Every store call is bounded (connect and reply timeouts, one retry),
and after a failure the store is left alone for STORE_BACKOFF_SECONDS, so a Redis that is
down or silent costs one bounded delay per interval and worker, never a hung request.

Time comes from a clock given to the limiter, the system's by default: tests pass one they
move by hand, so a window lapses or a back-off ends without waiting for it
(docs/decisions/tests.md)."""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import structlog
from limits import RateLimitItem
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from agent_broker.config import Settings, parse_rate_limit
from agent_broker.problems import RateLimited

log = structlog.get_logger("agent_broker.rate_limits")
T = TypeVar("T")

# redis-py waits forever for a reply by default and retries ten times.
REDIS_CONNECT_TIMEOUT_SECONDS = 2.0
REDIS_SOCKET_TIMEOUT_SECONDS = 2.0
# One immediate retry after a connection error (a pooled connection the server closed);
# none after a timeout, which would only double the wait.
REDIS_RETRIES = 1
STORE_BACKOFF_SECONDS = 10.0
# How long a worker takes a shared store's "not spent" at its word (exhausted(): the abuse
# brake asks on every screened text, a store round trip each time). A worker's own
# record() or hit() forgets it at once; another worker's reaches it within this delay.
UNSPENT_TRUST_SECONDS = 1.0
UNSPENT_REMEMBERED = 10_000  # answers kept at most; past that, all are forgotten


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch: dates the in-memory windows and Retry-After."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back: times the back-off and the trust."""
        ...


class SystemClock:
    """The real clock: what the service runs on."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()


class _Entry:
    """One counted event of a moving window: when it was counted and when it lapses."""

    __slots__ = ("atime", "expiry")

    def __init__(self, now: float, expiry: float) -> None:
        self.atime = now
        self.expiry = now + expiry


class ClockedMemoryStorage(MemoryStorage):
    """`limits`' in-memory store with its moving windows dated by `clock` (limits reads
    time.time() itself). The two methods the moving-window strategy calls are limits
    5.8's own, with the clock's time; everything else, lapsed entries' clean-up included,
    is limits' unchanged."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self._clock = clock

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        self._MemoryStorage__schedule_expiry()  # limits' clean-up of lapsed entries
        with self.locks[key]:
            events = self.events.setdefault(key, [])
            now = self._clock.time()
            entry = events[limit - amount] if len(events) > limit - amount else None
            if entry and entry.atime >= now - expiry:
                return False
            events[:0] = [_Entry(now, expiry)] * amount
            return True

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = self._clock.time()
        if events := self.events.get(key, []):
            oldest = bisect.bisect_left(events, -(now - expiry), key=lambda entry: -entry.atime)
            return events[oldest - 1].atime, oldest
        return now, 0


def storage_options(uri: str) -> dict[str, Any]:
    """Options `limits` passes on to the redis-py client (values in the URL's query win)."""
    if not uri.startswith("redis"):
        return {}
    return {
        "socket_connect_timeout": REDIS_CONNECT_TIMEOUT_SECONDS,
        "socket_timeout": REDIS_SOCKET_TIMEOUT_SECONDS,
        "retry": Retry(NoBackoff(), REDIS_RETRIES, supported_errors=(RedisConnectionError,)),
    }


class RateLimiter:
    def __init__(self, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> None:
        uri = settings.redis_url or "memory://"
        self._clock = clock
        self._shared = uri.startswith("redis")
        self._storage: Storage
        if uri.startswith("memory://"):
            self._storage = ClockedMemoryStorage(clock)
            self._window_time: Callable[[], float] = clock.time
        else:
            self._storage = storage_from_string(uri, **storage_options(uri))
            # limits dates a shared store's entries with the system clock itself.
            self._window_time = time.time
        self._limiter = MovingWindowRateLimiter(self._storage)
        self._items: dict[str, RateLimitItem] = {}
        # clock.monotonic() before which the store is not called (it failed recently).
        self._store_down_until = 0.0
        # (name, limit, identifiers) -> clock.monotonic() until which a shared store's
        # "not spent" stands without asking again (UNSPENT_TRUST_SECONDS).
        self._unspent_until: dict[tuple[str, ...], float] = {}

    def _item(self, limit: str) -> RateLimitItem:
        item = self._items.get(limit)
        if item is None:
            # The parse Settings checks the rate-limit settings with: one rate, or refused.
            item = self._items[limit] = parse_rate_limit(limit)
        return item

    def _guarded(self, name: str, call: Callable[[], T], fallback: T) -> T:
        """`call` against the store, or `fallback` (fail open) if the store fails or
        failed less than STORE_BACKOFF_SECONDS ago."""
        if self._clock.monotonic() < self._store_down_until:
            return fallback
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - any storage failure fails open
            self._store_down_until = self._clock.monotonic() + STORE_BACKOFF_SECONDS
            log.warning("rate_limit_store_unavailable", limit=name, error_type=type(exc).__name__)
            return fallback

    def hit(self, name: str, limit: str, *identifiers: str) -> None:
        """Count one event; raise 429 rate_limited with Retry-After when over the limit.

        If the shared store is unreachable the request is let through and the fault
        logged: a rate limit is a brake, not a reason to refuse service."""
        self._unspent_until.pop((name, limit, *identifiers), None)
        item = self._item(limit)

        def refusal() -> int | None:
            if self._limiter.hit(item, name, *identifiers):
                return None
            stats = self._limiter.get_window_stats(item, name, *identifiers)
            return math.ceil(max(1.0, stats.reset_time - self._window_time()))

        retry_after = self._guarded(name, refusal, None)
        if retry_after is not None:
            raise RateLimited(retry_after)

    def exhausted(self, name: str, limit: str, *identifiers: str) -> bool:
        """Whether the budget is spent, without counting anything (fails open). With a
        shared store, a "not spent" is taken for UNSPENT_TRUST_SECONDS."""
        key = (name, limit, *identifiers)
        now = self._clock.monotonic()
        if self._unspent_until.get(key, 0.0) > now:
            return False
        item = self._item(limit)
        spent = self._guarded(name, lambda: not self._limiter.test(item, name, *identifiers), False)
        if self._shared and not spent:
            if len(self._unspent_until) >= UNSPENT_REMEMBERED:
                self._unspent_until.clear()
            self._unspent_until[key] = now + UNSPENT_TRUST_SECONDS
        return spent

    def record(self, name: str, limit: str, *identifiers: str) -> None:
        """Count one event without refusing anything (fails open)."""
        self._unspent_until.pop((name, limit, *identifiers), None)
        item = self._item(limit)
        self._guarded(name, lambda: self._limiter.hit(item, name, *identifiers), False)

    def reset(self) -> None:
        self._unspent_until.clear()
        self._storage.reset()
