"""Tests that start the real service against this machine's PostgreSQL and Redis: skipped
when either is out of reach, failed instead when BROKER_TEST_REQUIRE_POSTGRES=1 or
BROKER_TEST_REQUIRE_REDIS=1 (CI)."""

from __future__ import annotations

import os

import pytest

from bench.soak import postgres_problem, redis_problem
from tests.support.settings import PG_ADMIN_DSN, REDIS_URL


def require_postgres_and_redis() -> None:
    for problem, required in (
        (postgres_problem(PG_ADMIN_DSN), "BROKER_TEST_REQUIRE_POSTGRES"),
        (redis_problem(REDIS_URL), "BROKER_TEST_REQUIRE_REDIS"),
    ):
        if problem and os.environ.get(required) == "1":
            pytest.fail(f"{problem} ({required}=1)")
        if problem:
            pytest.skip(problem)
