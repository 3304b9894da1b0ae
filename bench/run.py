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

Exit status: 0 if every scenario ran clean, 1 if any had errors or timed out, 2 if the
benchmark could not run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from typing import Any

from bench.config import ConfigError, Settings, settings_from_env
from bench.load import run_load
from bench.report import Outcome, as_json, table
from bench.scanner import mean_scan_ms
from bench.scenarios import SetupError
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
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if any(o.flagged for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
