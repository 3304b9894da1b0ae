"""`agent-broker serve --workers 2` on PostgreSQL: a worker that dies while the database
is out of reach is replaced by one that waits for the database to come back, and the
service keeps running. (A worker that fails its start-up makes uvicorn stop the whole
service; each worker's start-up publishes its signing key, which needs the database:
agent_broker.tokens.startup.)

The database's server is reached through a forwarding port that the test cuts (refusing
new connections and closing the open ones, as a restart does) and opens again."""

from __future__ import annotations

import os
import signal
import time

import pytest

from bench.soak_server import postgres_database, running_broker
from tests.support.forwarder import forwarding, url_through
from tests.support.http import wait_until
from tests.support.servers import require_postgres_and_redis
from tests.support.settings import PG_ADMIN_DSN, REDIS_URL

OUTAGE_S = 4.0  # long enough for the replacement worker to start and meet the outage


@pytest.mark.serial  # serve's workers start and restart: they need the CPUs to themselves
def test_a_worker_replaced_during_an_outage_waits_for_the_database(tmp_path):
    require_postgres_and_redis()
    with (
        postgres_database(PG_ADMIN_DSN) as database_url,
        forwarding(database_url) as forwarder,
    ):
        forwarder.open()
        through = url_through(database_url, forwarder)
        with running_broker(tmp_path, through, REDIS_URL, workers=2) as broker:
            [victim, survivor] = broker.worker_pids()
            forwarder.cut()
            os.kill(victim, signal.SIGKILL)
            wait_until(
                lambda: len(broker.worker_pids()) == 2, "a replacement worker", timeout=OUTAGE_S
            )
            time.sleep(OUTAGE_S)  # the replacement's start-up meets the outage
            assert broker.running(), "serve stopped when the replacement could not start"
            forwarder.open()
            wait_until(broker.healthy, "the service answering again", timeout=30)
            [replacement] = set(broker.worker_pids()) - {survivor}
            assert replacement != victim
            assert broker.running()
            time.sleep(2)  # the replacement has published its key and serves
            assert broker.running() and len(broker.worker_pids()) == 2
            log = broker.log_path.read_text()
            assert "signing key registration waits for the database" in log
            assert "failed to start" not in log
