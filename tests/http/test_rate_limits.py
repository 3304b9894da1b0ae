from __future__ import annotations

import os
import uuid

import pytest
import redis

from agent_broker.config import Settings
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.problems import RateLimited
from tests.helpers import assert_problem

REDIS_URL = os.environ.get("BROKER_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


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


def test_workers_sharing_redis_count_together(redis_url):
    source = uuid.uuid4().hex
    first, second = (RateLimiter(Settings(redis_url=redis_url)) for _ in range(2))
    first.hit("probe", "3/minute", source)
    second.hit("probe", "3/minute", source)
    first.hit("probe", "3/minute", source)
    with pytest.raises(RateLimited):
        second.hit("probe", "3/minute", source)


def test_registration_limit_is_shared_across_workers_through_redis(make_app, redis_url):
    from fastapi.testclient import TestClient

    limit = "2/hour"
    apps = [make_app(redis_url=redis_url, register_rate_limit=limit) for _ in range(2)]
    apps[0].state.rate_limiter.reset()
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
