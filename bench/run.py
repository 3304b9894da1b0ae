"""Throughput and latency of agent-broker routes relative to a bare FastAPI route.

Run from the repository root with `make bench` (or `.venv/bin/python -m bench.run`). It
starts the service on a fresh SQLite database in a temporary directory (one uvicorn
worker on 127.0.0.1), loads each scenario over keep-alive connections, prints a table
and writes the figures to bench/results/latest.json. The server and the load generator
share the machine's CPUs, so compare the ratio column rather than absolute figures.

Environment:
    BENCH_DURATION     measured seconds per scenario (default 5)
    BENCH_WARMUP       unmeasured warm-up seconds before each (default 1)
    BENCH_CONCURRENCY  concurrent connections (default 16)
    BENCH_SCENARIOS    comma-separated scenario names to run (default: all of
                       bench.scenarios.SCENARIOS); the baseline always runs
    BENCH_DEAL_CYCLE   0 skips the full deal cycle (post, open, counter, reply,
                       finalize), which otherwise runs on SQLite and PostgreSQL
    BENCH_DEAL_PAIRS   trading pairs running cycles concurrently (default 4)
    BENCH_SEALER       0 skips the deal cycle measured with and without the ledger
                       sealer running (bench.sealer), which otherwise runs on SQLite
                       and PostgreSQL
    BENCH_SEALER_ROUNDS    rounds of (without, with) the sealer (default 2)
    BENCH_SEALER_INTERVAL  seconds between sealer runs while it runs (default 0.5)
    BENCH_POSTGRES_DSN server for the PostgreSQL run (default the local one)

Exit status: 0 if every scenario ran clean, 1 if any had errors or timed out (or the
sealer failed or left a broken verdict), 2 if the benchmark could not run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Coroutine
from typing import Any

from bench.config import ConfigError, Settings, settings_from_env
from bench.cycle import run_all
from bench.load import run_load
from bench.report import Outcome, as_json, table
from bench.scanner import mean_scan_ms
from bench.scenarios import SetupError
from bench.sealer import run_all as compare_sealer
from bench.server import ROOT, Server, ServerError, running_server
from bench.wire import Client

RESULTS = ROOT / "bench" / "results" / "latest.json"


async def measure(server: Server, settings: Settings) -> list[Outcome]:
    client = Client(server.host, server.port)
    outcomes = []
    for scenario in settings.scenarios:
        if scenario.setup is not None:
            scenario = await scenario.setup(client, scenario, server)
        cpu_before = server.cpu_seconds()
        load = await run_load(
            server.host,
            server.port,
            scenario.encode(server.host, server.port),
            placeholder=scenario.placeholder,
            concurrency=settings.concurrency,
            duration_s=settings.duration_s,
            warmup_s=settings.warmup_s,
        )
        cpu_after = server.cpu_seconds()
        server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        outcomes.append(Outcome(scenario, load, server_cpu))
    return outcomes


def _run_async(main: Coroutine[Any, Any, list[Outcome]]) -> tuple[list[Outcome], str]:
    """Run on uvloop when installed: the generator then costs the shared CPUs less."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main), "asyncio"
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main), "uvloop"


def main() -> int:
    try:
        settings = settings_from_env()
        with running_server() as server:
            outcomes, loop = _run_async(measure(server, settings))
    except (ConfigError, ServerError, SetupError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(as_json(outcomes, settings, server, loop), indent=2) + "\n")
    print(table(outcomes, settings))
    scan_ms = mean_scan_ms()
    print(f"scanner: {scan_ms:.3f} ms mean per 10,000-character body (target < 1 ms)")
    if os.environ.get("BENCH_DEAL_CYCLE", "1") != "0":
        pairs = int(os.environ.get("BENCH_DEAL_PAIRS", "4"))
        for cycle in run_all(pairs, settings.duration_s, lambda c: _run_async(c)[0]):
            print(
                f"deal cycle ({cycle.backend}): {cycle.per_second:.1f} sealed deals/s with "
                f"{pairs} trading pairs; p50 {cycle.percentile_ms(0.5) or 0:.1f} ms, "
                f"p99 {cycle.percentile_ms(0.99) or 0:.1f} ms per deal (5 requests); "
                f"{cycle.errors} failed cycles"
            )
    sealer_ok = True
    if os.environ.get("BENCH_SEALER", "1") != "0":
        pairs = int(os.environ.get("BENCH_DEAL_PAIRS", "4"))
        for comparison in compare_sealer(pairs, settings.duration_s, lambda c: _run_async(c)[0]):
            print(comparison.summary())
            sealer_ok = sealer_ok and comparison.healthy
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if any(o.flagged for o in outcomes) or not sealer_ok else 0


if __name__ == "__main__":
    sys.exit(main())
