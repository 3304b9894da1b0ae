from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from agent_broker.config import Settings
from agent_broker.http import rate_limits
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.problems import RateLimited
from tests.support.clock import ManualClock
from tests.support.http import assert_problem
from tests.support.settings import REDIS_URL


@pytest.fixture
def redis_url() -> str:
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        if os.environ.get("BROKER_TEST_REQUIRE_REDIS") == "1":
            pytest.fail(f"Redis not reachable at {REDIS_URL}: {exc}")
        pytest.skip(f"Redis not reachable at {REDIS_URL}")
    return REDIS_URL


def test_in_memory_limits_refuse_past_the_limit_with_a_retry_delay():
    limiter = RateLimiter(Settings())
    for _ in range(3):
        limiter.hit("probe", "3/minute", "10.0.0.1")
    with pytest.raises(RateLimited) as refused:
        limiter.hit("probe", "3/minute", "10.0.0.1")
    seconds = refused.value.extra["retryAfterSeconds"]
    assert 1 <= seconds <= 60
    assert refused.value.headers == {"Retry-After": str(seconds)}
    limiter.hit("probe", "3/minute", "10.0.0.2")  # another source has its own budget


def test_in_memory_windows_and_retry_after_follow_the_limiters_clock():
    clock = ManualClock()
    limiter = RateLimiter(Settings(), clock=clock)
    for _ in range(3):
        limiter.hit("probe", "3/minute", "10.0.0.1")
    clock.advance(45)
    with pytest.raises(RateLimited) as refused:
        limiter.hit("probe", "3/minute", "10.0.0.1")
    assert refused.value.extra["retryAfterSeconds"] == 15
    assert limiter.exhausted("probe", "3/minute", "10.0.0.1")
    clock.advance(15.5)  # past the minute: the three hits left the moving window
    assert not limiter.exhausted("probe", "3/minute", "10.0.0.1")
    limiter.hit("probe", "3/minute", "10.0.0.1")


def test_the_default_clock_is_the_systems():
    limiter = RateLimiter(Settings())
    assert limiter._clock is rate_limits.SYSTEM_CLOCK
    before = time.time()
    limiter.hit("probe", "1/minute", "10.0.0.1")
    [entry] = limiter._storage.events[limiter._item("1/minute").key_for("probe", "10.0.0.1")]
    assert before <= entry.atime <= time.time()


def test_workers_sharing_redis_count_together(redis_url):
    source = uuid.uuid4().hex
    first, second = (RateLimiter(Settings(redis_url=redis_url)) for _ in range(2))
    first.hit("probe", "3/minute", source)
    second.hit("probe", "3/minute", source)
    first.hit("probe", "3/minute", source)
    with pytest.raises(RateLimited):
        second.hit("probe", "3/minute", source)


def test_a_shared_not_spent_is_trusted_briefly_and_a_workers_own_record_at_once(redis_url):
    clock = ManualClock()
    account = uuid.uuid4().hex
    first, second = (RateLimiter(Settings(redis_url=redis_url), clock=clock) for _ in range(2))
    assert not first.exhausted("brake", "2/hour", account)
    assert not second.exhausted("brake", "2/hour", account)
    first.record("brake", "2/hour", account)
    first.record("brake", "2/hour", account)
    assert first.exhausted("brake", "2/hour", account)  # its own records: at once
    # The other worker asked the store a moment ago and takes that answer a while longer.
    assert not second.exhausted("brake", "2/hour", account)
    clock.advance(rate_limits.UNSPENT_TRUST_SECONDS)
    assert second.exhausted("brake", "2/hour", account)


def test_an_in_memory_store_is_asked_every_time():
    limiter = RateLimiter(Settings())
    account = uuid.uuid4().hex
    assert not limiter.exhausted("brake", "1/hour", account)
    limiter._limiter.hit(limiter._item("1/hour"), "brake", account)  # not through record()
    assert limiter.exhausted("brake", "1/hour", account)


def test_registration_limit_is_shared_across_workers_through_redis(make_app, redis_url):
    from fastapi.testclient import TestClient

    limit = "2/hour"
    apps = [make_app(redis_url=redis_url, register_rate_limit=limit) for _ in range(2)]
    apps[0].state.context.rate_limiter.reset()
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        assert one.post("/v1/account/register", json={"accepted_terms": True}).status_code == 201
        assert two.post("/v1/account/register", json={"accepted_terms": True}).status_code == 201
        refused = one.post("/v1/account/register", json={"accepted_terms": True})
    body = assert_problem(refused, 429, "rate_limited")
    assert str(body["retryAfterSeconds"]) == refused.headers["Retry-After"]


def test_an_unreachable_store_lets_requests_through():
    limiter = RateLimiter(Settings(redis_url="redis://127.0.0.1:1/0"))
    for _ in range(5):
        limiter.hit("probe", "1/minute", "10.0.0.1")


# --- a store that is down or silent ----------------------------------------------------------


class SilentServer:
    """A TCP port that accepts connections and never answers, as a hung Redis would."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._sock.getsockname()[1]}/0"
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self._sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def silent_redis() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _timed(call) -> float:  # type: ignore[no-untyped-def]
    """Seconds `call` took; fails instead of hanging the suite if it does not return."""
    done = threading.Event()
    started = time.monotonic()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(timeout=15), "the rate-limit check hung on a silent store"
    return time.monotonic() - started


def test_the_redis_client_has_timeouts_and_does_not_retry_a_timeout():
    limiter = RateLimiter(Settings(redis_url=REDIS_URL))
    options = limiter._storage.storage.connection_pool.connection_kwargs
    assert options["socket_connect_timeout"] == rate_limits.REDIS_CONNECT_TIMEOUT_SECONDS == 2
    assert options["socket_timeout"] == rate_limits.REDIS_SOCKET_TIMEOUT_SECONDS == 2
    retry = options["retry"]
    assert retry.get_retries() == 1
    assert set(retry._supported_errors) == {redis.ConnectionError}


def test_a_silent_store_fails_open_after_one_timeout(silent_redis, monkeypatch):
    monkeypatch.setattr(rate_limits, "REDIS_SOCKET_TIMEOUT_SECONDS", 0.3)
    limiter = RateLimiter(Settings(redis_url=silent_redis.url))
    elapsed = _timed(lambda: limiter.hit("probe", "1/minute", "10.0.0.1"))
    assert 0.3 <= elapsed < 1.5
    assert len(silent_redis.accepted) == 1


def test_after_a_store_failure_checks_skip_the_store_for_a_while(silent_redis, monkeypatch):
    monkeypatch.setattr(rate_limits, "REDIS_SOCKET_TIMEOUT_SECONDS", 0.2)
    clock = ManualClock()
    limiter = RateLimiter(Settings(redis_url=silent_redis.url), clock=clock)
    limiter.hit("probe", "1/minute", "10.0.0.1")

    def more_checks() -> None:
        for _ in range(20):
            limiter.hit("probe", "1/minute", "10.0.0.1")
            assert limiter.exhausted("probe", "1/minute", "10.0.0.1") is False
            limiter.record("probe", "1/minute", "10.0.0.1")

    assert _timed(more_checks) < 0.1
    assert len(silent_redis.accepted) == 1
    clock.advance(rate_limits.STORE_BACKOFF_SECONDS - 0.001)
    more_checks()  # still within the back-off
    assert len(silent_redis.accepted) == 1
    clock.advance(0.001)
    limiter.hit("probe", "1/minute", "10.0.0.1")  # the back-off is over: the store is tried
    assert len(silent_redis.accepted) == 2


def test_registration_goes_through_while_the_store_is_unreachable(make_app):
    from fastapi.testclient import TestClient

    app = make_app(redis_url="redis://127.0.0.1:1/0", register_rate_limit="1/hour")
    with TestClient(app) as client:
        for _ in range(3):
            response = client.post("/v1/account/register", json={"accepted_terms": True})
            assert response.status_code == 201, response.text
