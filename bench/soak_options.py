"""What a soak run is asked to do (`python -m bench.soak` options), apart from the run
itself (bench.soak) so its report (bench.soak_report) can name them."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"


@dataclass(frozen=True)
class SoakOptions:
    seconds: float = 120.0
    clients: int = 64
    workers: int = 2
    kill_every: float = 5.0
    postgres_outage: str = "restart"  # bench.soak_outages.POSTGRES_OUTAGES
    redis_outage: str = "pause"  # bench.soak_outages.REDIS_OUTAGES
    sealer_every: float = 0.5  # seconds between the sealer's runs
    replay_fraction: float = 0.2  # of completed keyed calls, re-sent at once
    final_replays: int = 200  # completed keyed calls re-sent after the load
    postgres_dsn: str = os.environ.get("BENCH_POSTGRES_DSN", DEFAULT_POSTGRES)
    redis_url: str = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS)
