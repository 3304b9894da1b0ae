"""The soak's short form (bench.soak; `make soak` runs the long one): about 25 s of every
write route from 64 clients against `agent-broker serve --workers 2` on PostgreSQL and
Redis, one worker SIGKILLed every 3 s. It passes when no answer is a 5xx, connections fail
only around kills, every killed worker is replaced, replays with the same Idempotency-Key
answer as the first call did, every wallet and the fee book hold what the driver expects,
and `agent-broker ledger check` exits 0.

Runs when PostgreSQL (BROKER_TEST_POSTGRES_DSN) and Redis (BROKER_TEST_REDIS_URL) are
reachable and is skipped otherwise; BROKER_TEST_REQUIRE_POSTGRES=1 and
BROKER_TEST_REQUIRE_REDIS=1 (CI) turn a missing server into a failure."""

from __future__ import annotations

import os

import pytest

from bench.soak import SoakOptions, postgres_problem, redis_problem, run_soak
from tests.support.settings import PG_ADMIN_DSN, REDIS_URL


def _require_servers() -> None:
    for problem, required in (
        (postgres_problem(PG_ADMIN_DSN), "BROKER_TEST_REQUIRE_POSTGRES"),
        (redis_problem(REDIS_URL), "BROKER_TEST_REQUIRE_REDIS"),
    ):
        if problem and os.environ.get(required) == "1":
            pytest.fail(f"{problem} ({required}=1)")
        if problem:
            pytest.skip(problem)


@pytest.mark.serial  # its serve workers restart under load: they need the CPUs to themselves
def test_killed_workers_lose_no_money_and_no_idempotent_answer():
    _require_servers()
    options = SoakOptions(
        seconds=25,
        clients=64,
        workers=2,
        kill_every=3,
        postgres_dsn=PG_ADMIN_DSN,
        redis_url=REDIS_URL,
    )
    report = run_soak(options)
    print(report.summary())  # shown with -s, or on failure
    assert report.passed, report.summary()
    # The faults did happen: workers died mid-load and the driver saw it.
    assert len(report.kills.kills) >= 4
    assert report.tally.connection_failures
