"""Soak: the write side of the interface under load while workers are SIGKILLed.

    .venv/bin/python -m bench.soak [--seconds N] [--clients 64] [--workers 2] [--kill-every S]
        [--postgres-outage restart|terminate|none] [--redis-outage pause|none]

Creates a PostgreSQL database with a random name (dropped afterwards), migrates it, and
serves it with `agent-broker serve --workers N --no-migrate` on a free loopback port, rate
limits shared in Redis. Each client registers three accounts, completes their profiles,
has the operator fund them, then runs trading rounds (bench.soak_flow, each followed by
an escrow deal: bench.soak_escrow) until the time is up, while one worker is killed
every S seconds and uvicorn's supervisor replaces it, PostgreSQL is restarted once and
Redis paused once (bench.soak_outages), and the ledger sealer runs throughout
(bench.sealer_loop). Calls whose connection died or that were answered 503 are retried,
Idempotency-Key calls with the same key; a share of completed keyed calls is re-sent
during the load and a sample again after it.

It passes when: no answer had a 5xx status other than 503, and 503s came only during an
outage (or just after); connections failed only around kills; every
kill was followed by a replacement worker; every call answered as the flow expects; every
re-sent keyed call answered as it did first; every write route in /openapi.json succeeded;
each wallet's balance and holds, and the fee, operator and escrow books, equal the
driver's own account (the escrow book empty once every escrow settled); the sealer ran
throughout with every verdict ok; and `agent-broker ledger check` exits 0 over a sealed
chain.

Exit status: 0 all checks passed, 1 a check failed, 2 the soak could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import redis

from bench import soak_checks as checks
from bench.sealer_loop import THROUGH_OUTAGES
from bench.soak_accounts import Trader, fund, new_trader
from bench.soak_escrow import escrow_round
from bench.soak_flow import trade_round
from bench.soak_http import Caller, Exchange
from bench.soak_killer import kill_workers
from bench.soak_options import SoakOptions
from bench.soak_outages import POSTGRES_OUTAGES, REDIS_OUTAGES, cause_outages
from bench.soak_report import SoakReport
from bench.soak_server import ROOT, Broker, ServerError, postgres_database, running_broker


class SoakUnavailable(RuntimeError):
    """PostgreSQL or Redis cannot be reached, or the service would not start."""


async def _load(options: SoakOptions, broker: Broker, database_url: str) -> SoakReport:
    report = SoakReport(options)
    caller = Caller(broker.host, broker.port, report.tally, options.replay_fraction)
    openapi = (await caller.call("GET", "/openapi.json")).body
    made = await asyncio.gather(*(new_trader(caller, n) for n in range(options.clients)))
    if None in made:
        raise SoakUnavailable(f"setting up the clients failed: {report.tally.problems[:3]}")
    report.traders = [t for t in made if t is not None]
    accounts = [account for trader in report.traders for account in trader.accounts]
    fund(database_url, accounts)

    started = time.monotonic()
    deadline = started + options.seconds

    async def keep_trading(trader: Trader) -> None:
        while time.monotonic() < deadline:
            await trade_round(caller, trader)
            await escrow_round(caller, trader)

    await asyncio.gather(
        kill_workers(broker, options.kill_every, deadline, report.kills),
        cause_outages(
            options.postgres_outage,
            options.redis_outage,
            database_url,
            options.redis_url,
            options.seconds,
            report.outages,
        ),
        *(keep_trading(trader) for trader in report.traders),
    )
    report.load_seconds = time.monotonic() - started
    # Re-sent once the dust settled too: what was stored under fire must still answer.
    sample = random.sample(
        report.tally.exchanges, min(options.final_replays, len(report.tally.exchanges))
    )
    # As many at a time as there are clients: the load stays the size asked for.
    await asyncio.gather(
        *(_replay_all(caller, sample[n :: options.clients]) for n in range(options.clients))
    )

    wanted_kills = max(1, int(options.seconds / options.kill_every / 2))
    report.checks = [
        checks.server_errors(report.tally),
        checks.unavailable(report.tally, report.outages),
        checks.connection_failures(report.tally, report.kills),
        checks.restarts(report.kills, broker, wanted_kills),
        checks.requests(report.tally),
        checks.replays(report.tally),
        checks.coverage(openapi, report.tally),
        await checks.balances(caller, accounts),
        checks.fee_books(database_url, accounts),
    ]
    return report


async def _replay_all(caller: Caller, exchanges: list[Exchange]) -> None:
    for exchange in exchanges:
        await caller.replay(exchange)


def start_sealer(broker: Broker, every_s: float) -> subprocess.Popen[str]:
    """The sealer loop (bench.sealer_loop, through outages) in a process of its own, on the
    service's database and settings."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.sealer_loop", str(every_s), THROUGH_OUTAGES],
        env=broker.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def stop_sealer(sealing: subprocess.Popen[str]) -> dict | None:
    """Stop the sealer loop; its figures, or None if it printed none."""
    sealing.send_signal(signal.SIGTERM)
    try:
        out, _ = sealing.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        sealing.kill()
        return None
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def postgres_problem(dsn: str) -> str | None:
    """Why PostgreSQL at `dsn` cannot serve the soak, or None."""
    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        return f"PostgreSQL not reachable at {dsn}: {type(exc).__name__}"
    return None


def redis_problem(url: str) -> str | None:
    """Why Redis at `url` cannot serve the soak, or None (the service would fail open
    without it, and the shared rate limits would go untested)."""
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        return f"Redis not reachable at {url}: {type(exc).__name__}"
    return None


def run_soak(options: SoakOptions) -> SoakReport:
    if reason := postgres_problem(options.postgres_dsn) or redis_problem(options.redis_url):
        raise SoakUnavailable(reason)
    with (
        tempfile.TemporaryDirectory(prefix="agent-broker-soak-") as tmp,
        postgres_database(options.postgres_dsn) as database_url,
    ):
        try:
            with running_broker(
                Path(tmp), database_url, options.redis_url, options.workers
            ) as broker:
                sealing = start_sealer(broker, options.sealer_every)
                try:
                    report = asyncio.run(_load(options, broker, database_url))
                finally:
                    figures = stop_sealer(sealing)
                    logged = broker.logged_errors()
                    if kept := os.environ.get("BENCH_SOAK_KEEP_LOG"):
                        shutil.copyfile(broker.log_path, kept)  # the service's log, to read
                report.checks += [checks.sealer(figures), checks.ledger_check(broker)]
        except ServerError as exc:
            raise SoakUnavailable(str(exc)) from None
    report.server_errors = logged
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=SoakOptions.seconds)
    parser.add_argument("--clients", type=int, default=SoakOptions.clients)
    parser.add_argument("--workers", type=int, default=SoakOptions.workers)
    parser.add_argument("--kill-every", type=float, default=SoakOptions.kill_every)
    parser.add_argument(
        "--postgres-outage", choices=POSTGRES_OUTAGES, default=SoakOptions.postgres_outage
    )
    parser.add_argument("--redis-outage", choices=REDIS_OUTAGES, default=SoakOptions.redis_outage)
    args = parser.parse_args(argv)
    if min(args.seconds, args.clients, args.kill_every) <= 0:
        parser.error("--seconds, --clients and --kill-every must be positive")
    if args.workers < 2:
        # One worker is served by the serve process itself: no supervisor to replace it.
        parser.error("--workers must be at least 2")
    options = SoakOptions(
        args.seconds,
        args.clients,
        args.workers,
        args.kill_every,
        postgres_outage=args.postgres_outage,
        redis_outage=args.redis_outage,
    )
    try:
        report = run_soak(options)
    except SoakUnavailable as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
