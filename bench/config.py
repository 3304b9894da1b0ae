"""Benchmark settings, read from BENCH_* environment variables (documented in bench.run)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from bench.scenarios import SCENARIOS, Scenario

# Trading pairs for the SQLite deal cycle: the best of 4, 8, 16 and 32 on the 2-core
# development VM (see bench.run's docstring for the sweep). Since writers in line share a
# commit (agent_broker.db.group_commit) more pairs make larger groups: 32 pairs, 64
# clients as on PostgreSQL and in the route runs, did 324-336 deals/s where 8 did 289-308
# (p99 109-148 against 38-45 ms per deal).
DEFAULT_DEAL_PAIRS = 32


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Settings:
    duration_s: float
    warmup_s: float
    concurrency: int  # connections for the route and memory runs
    wrk: str  # "" finds wrk on PATH, "0" forces the Python generator, else wrk's path
    wrk_threads: int
    scenarios: tuple[Scenario, ...]  # service scenarios; the bare baseline always runs
    memory_requests: int  # 0 skips the memory run
    deal_cycle: bool
    deal_pairs: int  # SQLite
    pg_workers: tuple[int, ...]
    pg_clients: int  # concurrent clients (two per trading pair) on PostgreSQL
    postgres_dsn: str
    redis_url: str
    sealer: bool | None  # None: run it if the time budget allows
    sealer_rounds: int
    sealer_interval_s: float
    budget_s: float
    events_log_rounds: int = 2  # rounds of (with, without) the events log; 0 skips them
    cycle_rounds: int = 2  # rounds of the SQLite cycles (direct, escrow, two more offers)


def _number(name: str, default: float, kind: type[int] | type[float], minimum: float = 1) -> Any:
    raw = os.environ.get(name, "").strip()
    try:
        value = kind(raw) if raw else kind(default)
    except ValueError:
        value = None
    if value is None or value < minimum or (kind is float and value <= 0):
        what = f"an integer of at least {minimum:g}" if kind is int else "a positive number"
        raise ConfigError(f"{name} must be {what}, not {raw!r}")
    return value


def _switch(name: str) -> bool | None:
    raw = os.environ.get(name, "").strip()
    if raw not in ("", "0", "1"):
        raise ConfigError(f"{name} must be 0 or 1, not {raw!r}")
    return None if raw == "" else raw == "1"


def _scenarios() -> tuple[Scenario, ...]:
    wanted = [n.strip() for n in os.environ.get("BENCH_SCENARIOS", "").split(",") if n.strip()]
    unknown = set(wanted) - {s.name for s in SCENARIOS}
    if unknown:
        known = ", ".join(s.name for s in SCENARIOS)
        raise ConfigError(f"unknown BENCH_SCENARIOS {', '.join(sorted(unknown))}; known: {known}")
    return tuple(s for s in SCENARIOS if not wanted or s.name in wanted)


def _workers() -> tuple[int, ...]:
    raw = os.environ.get("BENCH_PG_WORKERS", "").strip() or "1,2,4"
    try:
        counts = tuple(int(part) for part in raw.split(",") if part.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise ConfigError(f"BENCH_PG_WORKERS must list worker counts like 1,2,4, not {raw!r}")
    return counts


def settings_from_env() -> Settings:
    memory_requests = _number("BENCH_MEMORY_REQUESTS", 100_000, int, minimum=0)
    if 0 < memory_requests <= 1_000:
        raise ConfigError("BENCH_MEMORY_REQUESTS must be 0 (skip) or more than 1000")
    pg_clients = _number("BENCH_PG_CLIENTS", 64, int, minimum=2)
    if pg_clients % 2:
        raise ConfigError("BENCH_PG_CLIENTS must be even: two traders per pair")
    return Settings(
        duration_s=_number("BENCH_DURATION", 5, float, minimum=0),
        warmup_s=_number("BENCH_WARMUP", 1, float, minimum=0),
        concurrency=_number("BENCH_CONCURRENCY", 64, int),
        wrk=os.environ.get("BENCH_WRK", "").strip(),
        wrk_threads=_number("BENCH_WRK_THREADS", 1, int),
        scenarios=_scenarios(),
        memory_requests=memory_requests,
        deal_cycle=_switch("BENCH_DEAL_CYCLE") is not False,
        deal_pairs=_number("BENCH_DEAL_PAIRS", DEFAULT_DEAL_PAIRS, int),
        pg_workers=_workers(),
        pg_clients=pg_clients,
        postgres_dsn=os.environ.get(
            "BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
        redis_url=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15"),
        sealer=_switch("BENCH_SEALER"),
        sealer_rounds=_number("BENCH_SEALER_ROUNDS", 2, int),
        sealer_interval_s=_number("BENCH_SEALER_INTERVAL", 0.5, float, minimum=0),
        budget_s=_number("BENCH_BUDGET", 360, float, minimum=0),
        events_log_rounds=_number("BENCH_EVENTS_LOG_ROUNDS", 2, int, minimum=0),
        cycle_rounds=_number("BENCH_CYCLE_ROUNDS", 2, int),
    )
