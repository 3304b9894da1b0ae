"""Deal throughput with and without the ledger sealer running against the same database.

The deal cycle (bench.cycle) is measured in alternating rounds: without the sealer, then
with a sealer process calling agent_broker.ledger.sealer.run in a loop (every
BENCH_SEALER_INTERVAL seconds, default 0.5, with no safety margin so each run seals the
rows the deals just wrote and re-verifies the whole journal). In `serve` the sealer runs
once an hour; this runs it thousands of times more often, so any interference with the
money writes shows. The figure is the ratio of sealed deals per second with the sealer to
without (target: at least 0.90). The sealer's last verdict must be `ok`: the journal was
written concurrently with every run, so a broken verdict would mean the sealer sealed past
a row that was still to appear. The sealer process is bench.sealer_loop."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from bench.cycle import (
    CycleResult,
    measure_cycles,
    pooled_p99_ms,
    pooled_per_second,
)
from bench.postgres import Unavailable, fresh_database
from bench.server import ROOT, Server, running_server

TARGET_RATIO = 0.90


@dataclass
class SealerComparison:
    backend: str
    without: list[CycleResult] = field(default_factory=list)
    with_sealer: list[CycleResult] = field(default_factory=list)
    runs: int = 0  # sealer runs completed while the deals ran
    busy_s: float = 0.0  # time spent inside those runs
    loop_s: float = 0.0  # time the sealer loop was up
    verdict: str = "unknown"  # the last run's verdict
    error: str | None = None

    @property
    def per_second_without(self) -> float:
        return pooled_per_second(self.without)

    @property
    def per_second_with(self) -> float:
        return pooled_per_second(self.with_sealer)

    @property
    def ratio(self) -> float:
        base = self.per_second_without
        return self.per_second_with / base if base else 0.0

    @property
    def errors(self) -> int:
        return sum(r.failed for r in self.without + self.with_sealer)

    @property
    def healthy(self) -> bool:
        """The sealer ran and left an ok verdict (the ratio is reported, not judged)."""
        return self.error is None and self.runs > 0 and self.verdict == "ok"

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "deals_per_s_without": round(self.per_second_without, 1),
            "deals_per_s_with": round(self.per_second_with, 1),
            "p99_ms_without": _round(pooled_p99_ms(self.without)),
            "p99_ms_with": _round(pooled_p99_ms(self.with_sealer)),
            "ratio": round(self.ratio, 3),
            "target_ratio": TARGET_RATIO,
            "sealer_runs": self.runs,
            "sealer_busy_share": round(self.busy_s / self.loop_s, 3) if self.loop_s else None,
            "verdict": self.verdict,
            "error": self.error,
            "failed_cycles": self.errors,
        }

    def summary(self) -> str:
        duty = self.busy_s / self.loop_s if self.loop_s else 0.0
        verdict = f"last verdict {self.verdict}" + (f" ({self.error})" if self.error else "")
        mark = "" if self.ratio >= TARGET_RATIO else f"  BELOW TARGET {TARGET_RATIO:.2f}"
        p99_with, p99_without = pooled_p99_ms(self.with_sealer), pooled_p99_ms(self.without)
        return (
            f"sealer ({self.backend}): {self.per_second_with:.1f} sealed deals/s with the "
            f"sealer running (p99 {_ms(p99_with)}) vs {self.per_second_without:.1f} without "
            f"(p99 {_ms(p99_without)}): ratio "
            f"{self.ratio:.2f} (target >= {TARGET_RATIO:.2f}){mark}; {self.runs} sealer "
            f"runs, busy {duty:.0%} of the time; {verdict}; {self.errors} failed cycles"
        )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


async def _start_sealer(server: Server, interval_s: float) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.sealer_loop",
        str(interval_s),
        cwd=ROOT,
        env=server.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _stop_sealer(proc: asyncio.subprocess.Process, into: SealerComparison) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    out, err = await proc.communicate()
    try:
        figures = json.loads(out)
    except ValueError:
        into.error = f"sealer loop exited {proc.returncode}: {err.decode()[-500:].strip()}"
        return
    into.runs += figures["runs"]
    into.busy_s += figures["busy_s"]
    into.loop_s += figures["loop_s"]
    into.verdict = figures["verdict"]
    if figures.get("error"):
        into.error = figures["error"]


async def compare(
    server: Server, backend: str, pairs: int, duration_s: float, rounds: int, interval_s: float
) -> SealerComparison:
    """Alternate rounds without and with the sealer, so drift (a growing database, a
    warming cache, a noisy neighbour) weighs on both sides alike."""
    result = SealerComparison(backend=backend)
    for _ in range(rounds):
        result.without.append(await measure_cycles(server, backend, pairs, duration_s, 0))
        proc = await _start_sealer(server, interval_s)
        try:
            result.with_sealer.append(await measure_cycles(server, backend, pairs, duration_s, 0))
        finally:
            await _stop_sealer(proc, result)
    return result


def run_all(
    pairs: int,
    duration_s: float,
    rounds: int,
    interval_s: float,
    admin_dsn: str,
    run: Callable[[Coroutine[Any, Any, SealerComparison]], SealerComparison],
) -> list[SealerComparison]:
    """Compare on SQLite, then on PostgreSQL (one uvicorn worker) when reachable (`run`
    drives a coroutine)."""
    results = []
    with running_server() as server:
        results.append(run(compare(server, "sqlite", pairs, duration_s, rounds, interval_s)))
    try:
        with fresh_database(admin_dsn) as url, running_server(url) as server:
            results.append(
                run(compare(server, "postgresql", pairs, duration_s, rounds, interval_s))
            )
    except Unavailable as exc:
        print(f"sealer: measured on SQLite only: {exc}", file=sys.stderr)
    return results
