"""Throughput, latency and memory of agent-broker against issue 12's targets, in one run.

Run from the repository root with `make bench` (or `.venv/bin/python -m bench.run`). Every
server runs on 127.0.0.1 from a fresh temporary directory and database, so concurrent runs
do not collide. In order:

1. Routes. The baseline is a bare FastAPI app (bench/bare.py: one `async` route answering
   {"ok": true}, no middleware) in its own uvicorn process; then the service,
   `agent_broker.app:app_factory` as `agent-broker serve` builds it, under one uvicorn
   worker on a fresh SQLite database (10,000 live listings seeded for the feed), with the
   same uvicorn options (no access log, log level warning, httptools); the service runs on
   asyncio's event loop, as `agent-broker serve --workers 1` runs it, and the bare app on
   uvicorn's own pick, uvloop, which serves it faster. Each
   scenario (bench/scenarios.py) runs a warm-up, then a measured window, from wrk with
   BENCH_CONCURRENCY keep-alive connections (bench/wrk/plan.lua gives every POST
   /v1/listings a fresh Idempotency-Key and reports requests, latency percentiles and
   statuses). Any non-2xx response or socket error flags the row. Without wrk the Python
   generator (bench/load.py) stands in, with a warning: its figures are generator-bound.
2. The content scanner on a clean 10,000-character listing body, in this process; feed
   search at 100,000 listings on SQLite, also in this process (bench/search.py).
3. Memory: on a fresh service process, the worker's VmRSS after 1,000 requests and after
   BENCH_MEMORY_REQUESTS requests of a mixed workload (bench/memory.py).
4. Deal cycle (bench/cycle.py: post, open, counter-offer, reply, finalize; funded traders
   with complete profiles, one keep-alive connection each): on SQLite with one worker and
   BENCH_DEAL_PAIRS pairs; then the escrow cycle alike on a fresh SQLite database (an
   escrow listing, the buyer's price held at opening, the same negotiation and seal, then
   delivery and acceptance: seven requests, a deal counted once its escrow is released);
   then the direct cycle with two more offers, the escrow target's reference (seven
   requests, no escrow); the three in turn for BENCH_CYCLE_ROUNDS rounds, each on a fresh
   database, each cycle's figures pooled over its rounds; then the events log's cost
   (bench/events_log.py: the direct cycle on one SQLite database in alternating rounds
   with and without the log's writes, switched off by a bench-only patch); then on
   PostgreSQL under the real `agent-broker serve --workers N` for each N in
   BENCH_PG_WORKERS, each on a fresh database (`bench_<random>`, dropped afterwards),
   with rate limits shared through Redis, BENCH_PG_CLIENTS clients.
5. Ledger sealer: the deal cycle with and without a sealer process (bench/sealer.py).

Then one line per target (bench/targets.py), `target: <name> ... measured <value> (p99 <x>
ms) ... PASS|FAIL|SKIP`, and a final `targets: X/Y PASS`. Every figure is also written to
bench/results/latest.json. Percentiles from wrk are wrk's (corrected for coordinated
omission, as `wrk --latency` prints them).

Environment:
    BENCH_DURATION     measured seconds per route scenario and per deal-cycle run
                       (default 5; wrk rounds up to whole seconds)
    BENCH_WARMUP       unmeasured warm-up seconds before each (default 1)
    BENCH_CONCURRENCY  connections for the route and memory runs (default 64)
    BENCH_WRK          wrk to use: unset finds `wrk` on PATH; a path names it; 0 forces the
                       Python generator
    BENCH_WRK_THREADS  wrk threads (default 1: on 2 cores one thread drives 64
                       connections faster than the bare app answers, and leaves the
                       server more CPU)
    BENCH_SCENARIOS    comma-separated service scenarios to run (default all of
                       bench.scenarios.SCENARIOS: health, account, register, feed,
                       listing, thread); the bare baseline always runs
    BENCH_MEMORY_REQUESTS  requests of the memory run (default 100000; 0 skips it)
    BENCH_DEAL_CYCLE   0 skips every deal-cycle run (SQLite and PostgreSQL)
    BENCH_DEAL_PAIRS   trading pairs running cycles concurrently on SQLite (default 32,
                       64 clients: the best of 4, 8, 16 and 32 on the 2-core development
                       VM since writers in line share a commit)
    BENCH_CYCLE_ROUNDS rounds of the SQLite cycles, each on a fresh database, direct,
                       escrow and two more offers in turn (default 2); each cycle's
                       figures pool its rounds, so a drift of the machine's speed falls
                       on every cycle alike
    BENCH_PG_WORKERS   `agent-broker serve --workers` counts to run (default 1,2,4)
    BENCH_PG_CLIENTS   concurrent clients on PostgreSQL, two per trading pair (default 64)
    BENCH_POSTGRES_DSN server for the PostgreSQL runs, as a database to connect to for
                       CREATE/DROP DATABASE (default postgresql://postgres@127.0.0.1:5432/
                       postgres); not reachable: those figures are skipped
    BENCH_REDIS_URL    BROKER_REDIS_URL for the PostgreSQL workers (default
                       redis://127.0.0.1:6379/15); not reachable: they run without
    BENCH_EVENTS_LOG_ROUNDS  rounds of (with, without) the events log (default 2; 0 skips
                       the comparison); each round runs two BENCH_DURATION windows
    BENCH_SEALER       1 runs the sealer comparison, 0 skips it; unset: it runs when the
                       run so far leaves time for it within BENCH_BUDGET
    BENCH_SEALER_ROUNDS    rounds of (without, with) the sealer (default 2)
    BENCH_SEALER_INTERVAL  seconds between sealer runs while it runs (default 0.5)
    BENCH_BUDGET       seconds the whole run should take (default 360); only decides
                       whether the sealer comparison runs by default

Targets (issue 12) and how they are judged:
    GET /v1/account, GET /v1/feed, POST /v1/listings, GET /v1/threads/{id}: req/s at least
        0.25, 0.15, 0.10 and 0.15 of the bare app's, with no error in the run
    deal cycle on SQLite, one worker: at least 300 sealed deals/s
    escrow cycle on SQLite, one worker (issue 35): released escrow deals/s at least 0.8 of
        the direct cycle's sealed deals/s in the same run, with no failed cycle. Counted
        per deal, whatever its requests: the escrow cycle makes seven to the direct five.
        Beside it, for reference, the direct cycle with two more offers (seven requests, no
        escrow): what the escrow cycle would reach were its two steps as cheap as an offer
    events log (issue 34): sealed deals/s with the log at least 0.9 of without it, the log
        seen to grow in every round with it and in none without it, no failed cycle
    deal cycle on PostgreSQL with 2 workers: at least 150 sealed deals/s
    scaling: 2 workers beat 1; 4 workers reach at least 0.95 of 2 (2 cores: 4 workers add
        no CPU, so the figure must hold within run-to-run noise)
    PostgreSQL: no failed cycle (5xx, such as a deadlock's 500, counted apart) at
        BENCH_PG_CLIENTS clients, over every worker count
    memory: worker RSS after BENCH_MEMORY_REQUESTS requests within 20% of after 1,000

Exit status: 0 if every measurement ran clean; 1 if any had errors (a non-2xx response or
socket error in a route or memory run, a run that timed out, a failed deal cycle, or a
sealer that failed or left a broken verdict, an events-log comparison whose switch did
not hold); 2 if the benchmark could not run. A target
FAILing does not change it, so the run completes while work towards a target is under way:
read the targets lines and the summary.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from bench.config import ConfigError, Settings, settings_from_env
from bench.cycle import SQLITE_CYCLES, CycleResult, merged, postgres_cycles, sqlite_cycles
from bench.events_log import EventsLogComparison
from bench.events_log import run as compare_events_log
from bench.generator import Generator, choose
from bench.memory import MemoryResult, measure_memory
from bench.postgres import Unavailable, redis_problem
from bench.report import as_json, table
from bench.routes import measure_routes
from bench.scanner import mean_scan_ms
from bench.scenarios import SetupError
from bench.sealer import SealerComparison
from bench.sealer import run_all as compare_sealer
from bench.search import measure as measure_search
from bench.server import ROOT, ServerError
from bench.targets import (
    escrow_cycle_target,
    events_log_target,
    memory_target,
    postgres_targets,
    route_targets,
    search_target,
    sqlite_cycle_target,
    summary,
)
from bench.wrk_load import WrkError

RESULTS = ROOT / "bench" / "results" / "latest.json"
# What the sealer comparison costs besides its rounds (two servers started and seeded).
SEALER_OVERHEAD_S = 20.0
T = TypeVar("T")


def drive(main: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop when installed: the Python clients then cost the shared CPUs less."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def run_cycles(settings: Settings) -> list[CycleResult]:
    args = (settings.duration_s, settings.warmup_s, drive)
    runs: dict[str, list[CycleResult]] = {kind: [] for kind in SQLITE_CYCLES}
    for _ in range(settings.cycle_rounds):
        for kind in SQLITE_CYCLES:
            runs[kind].append(sqlite_cycles(settings.deal_pairs, *args, cycle=kind))
    cycles = [merged(results) for results in runs.values()]
    for cycle in cycles:
        print(cycle.summary(), flush=True)
    redis_url: str | None = settings.redis_url
    if problem := redis_problem(settings.redis_url):
        print(
            f"warning: Redis at {settings.redis_url} not usable ({problem}); "
            "the PostgreSQL workers count rate limits each on their own",
            flush=True,
        )
        redis_url = None
    try:
        for cycle in postgres_cycles(
            settings.postgres_dsn,
            redis_url,
            settings.pg_workers,
            settings.pg_clients // 2,
            *args,
        ):
            cycles.append(cycle)
            print(cycle.summary(), flush=True)
    except Unavailable as exc:
        print(f"deal cycle: PostgreSQL not measured: {exc}", flush=True)
    return cycles


def sealer_wanted(settings: Settings, elapsed_s: float) -> bool:
    if settings.sealer is not None:
        return settings.sealer
    # Both backends: rounds of (without, with), plus starting and seeding each.
    needed_s = 2 * (settings.sealer_rounds * 2 * settings.duration_s + SEALER_OVERHEAD_S)
    if elapsed_s + needed_s <= settings.budget_s:
        return True
    print(
        f"sealer: skipped: the run has taken {elapsed_s:.0f} s and the comparison needs "
        f"about {needed_s:.0f} s more, past BENCH_BUDGET={settings.budget_s:g} s; "
        "BENCH_SEALER=1 runs it",
        flush=True,
    )
    return False


def run_all(settings: Settings, generator: Generator, started: float) -> int:
    outcomes = drive(measure_routes(generator, settings))
    print(table(outcomes, settings, generator), flush=True)
    scan_ms = mean_scan_ms()
    print(f"scanner: {scan_ms:.3f} ms mean per 10,000-character body (target < 1 ms)")
    search_ms = measure_search()
    print(f"feed search: {search_ms[0]:.1f} ms mean, p99 {search_ms[1]:.1f} ms per page at 100k")

    memory: MemoryResult | None = None
    if settings.memory_requests:
        memory = measure_memory(generator, settings.memory_requests, drive)
        print(memory.summary(), flush=True)

    cycles = run_cycles(settings) if settings.deal_cycle else []
    events_log: EventsLogComparison | None = None
    if settings.deal_cycle and settings.events_log_rounds:
        events_log = compare_events_log(
            settings.deal_pairs, settings.duration_s, settings.events_log_rounds, drive
        )
        print(events_log.summary(), flush=True)

    sealers: list[SealerComparison] = []
    if sealer_wanted(settings, time.monotonic() - started):
        sealers = compare_sealer(
            settings.deal_pairs,
            settings.duration_s,
            settings.sealer_rounds,
            settings.sealer_interval_s,
            settings.postgres_dsn,
            drive,
        )
        for comparison in sealers:
            print(comparison.summary())

    sqlite = _cycle(cycles, "sqlite", "direct")
    targets = [
        *route_targets(outcomes),
        sqlite_cycle_target(sqlite),
        escrow_cycle_target(
            sqlite, _cycle(cycles, "sqlite", "escrow"), _cycle(cycles, "sqlite", "offers")
        ),
        events_log_target(events_log),
        *postgres_targets([c for c in cycles if c.backend == "postgresql"], settings.pg_clients),
        memory_target(memory, settings.memory_requests or 100_000),
        search_target(search_ms),
    ]
    elapsed_s = time.monotonic() - started
    document = as_json(
        settings,
        generator,
        outcomes,
        scan_ms,
        cycles,
        memory,
        sealers,
        targets,
        elapsed_s,
        events_log,
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)} ({elapsed_s:.0f} s in all)")
    for target in targets:
        print(target.line())
    print(summary(targets))

    errors = (
        any(o.load.flagged for o in outcomes)
        or (memory is not None and memory.flagged)
        or any(c.failed for c in cycles)
        or not all(s.healthy for s in sealers)
        or (events_log is not None and not events_log.healthy)
    )
    return 1 if errors else 0


def _cycle(cycles: list[CycleResult], backend: str, kind: str) -> CycleResult | None:
    return next((c for c in cycles if c.backend == backend and c.cycle == kind), None)


def main() -> int:
    started = time.monotonic()
    try:
        settings = settings_from_env()
        generator = choose(settings.wrk, settings.wrk_threads, settings.concurrency)
        if warning := generator.warning(settings.wrk):
            print(warning, flush=True)
        return run_all(settings, generator, started)
    except (ConfigError, ServerError, SetupError, WrkError) as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
