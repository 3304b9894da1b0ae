"""The soak's short form (bench.soak; `make soak` runs the long one): about 25 s of every
write route from 64 clients against `agent-broker serve --workers 2` on PostgreSQL and
Redis, one worker SIGKILLed every 3 s, one database outage, and the ledger sealer running
throughout. It passes when no answer is a 500 (503 only during the outage, each retried
write landing once), connections fail only around kills, every killed worker is replaced,
replays with the same Idempotency-Key answer as the first call did, every wallet and the
fee book hold what the driver expects, and `agent-broker ledger check` exits 0 over a
sealed chain.

The outage restarts PostgreSQL (`pg_ctlcluster ... restart -m fast`) when
BROKER_TEST_SOAK_RESTART_POSTGRES=1 (CI, which owns its server; the test is serial, so
nothing else runs meanwhile); otherwise it terminates every session of the soak's own
database for as long as a restart takes, which touches no one else's on a shared server.

Runs when PostgreSQL (BROKER_TEST_POSTGRES_DSN) and Redis (BROKER_TEST_REDIS_URL) are
reachable and is skipped otherwise; BROKER_TEST_REQUIRE_POSTGRES=1 and
BROKER_TEST_REQUIRE_REDIS=1 (CI) turn a missing server into a failure."""

from __future__ import annotations

import os

import pytest

from bench.soak import SoakOptions, run_soak
from tests.support.servers import require_postgres_and_redis
from tests.support.settings import PG_ADMIN_DSN, REDIS_URL


@pytest.mark.serial  # its serve workers restart under load: they need the CPUs to themselves
def test_killed_workers_lose_no_money_and_no_idempotent_answer():
    require_postgres_and_redis()
    options = SoakOptions(
        seconds=25,
        clients=64,
        workers=2,
        kill_every=3,
        postgres_dsn=PG_ADMIN_DSN,
        redis_url=REDIS_URL,
        postgres_outage=(
            "restart" if os.environ.get("BROKER_TEST_SOAK_RESTART_POSTGRES") == "1" else "terminate"
        ),
        redis_outage="none",
    )
    report = run_soak(options)
    print(report.summary())  # shown with -s, or on failure
    assert report.passed, report.summary()
    # The faults did happen: workers died mid-load and the driver saw it.
    assert len(report.kills.kills) >= 4
    assert report.tally.connection_failures
    # And so did the database outage.
    assert [o.kind for o in report.outages.outages] == [f"postgres {options.postgres_outage}"]
