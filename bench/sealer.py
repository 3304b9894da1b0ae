"""Deal throughput with and without the ledger sealer running against the same database.

The deal cycle (bench.cycle) is measured in alternating rounds: without the sealer, then
with a sealer process calling agent_broker.ledger.sealer.run in a loop (every
BENCH_SEALER_INTERVAL seconds, default 0.5, with no safety margin so each run seals the
rows the deals just wrote and re-verifies the whole journal). In `serve` the sealer runs
once an hour; this runs it thousands of times more often, so any interference with the
money writes shows. The figure is the ratio of sealed deals per second with the sealer to
without (target: at least 0.90). The sealer's last verdict must be `ok`: the journal was
written concurrently with every run, so a broken verdict would mean the sealer sealed past
a row that was still to appear.

Run as `python -m bench.sealer` (with the server's environment) it is that sealer loop:
it stops on SIGTERM and prints its figures as JSON."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from bench.cycle import CycleResult, measure_cycles, postgres_database
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

    @staticmethod
    def _rate(results: list[CycleResult]) -> float:
        seconds = sum(r.seconds for r in results)
        return sum(r.deals for r in results) / seconds if seconds else 0.0

    @property
    def per_second_without(self) -> float:
        return self._rate(self.without)

    @property
    def per_second_with(self) -> float:
        return self._rate(self.with_sealer)

    @property
    def ratio(self) -> float:
        base = self.per_second_without
        return self.per_second_with / base if base else 0.0

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.without + self.with_sealer)

    @property
    def healthy(self) -> bool:
        """The sealer ran and left an ok verdict (the ratio is reported, not judged)."""
        return self.error is None and self.runs > 0 and self.verdict == "ok"

    def summary(self) -> str:
        duty = self.busy_s / self.loop_s if self.loop_s else 0.0
        verdict = f"last verdict {self.verdict}" + (f" ({self.error})" if self.error else "")
        mark = "" if self.ratio >= TARGET_RATIO else f"  BELOW TARGET {TARGET_RATIO:.2f}"
        return (
            f"sealer ({self.backend}): {self.per_second_with:.1f} sealed deals/s with the "
            f"sealer running vs {self.per_second_without:.1f} without: ratio "
            f"{self.ratio:.2f} (target >= {TARGET_RATIO:.2f}){mark}; {self.runs} sealer "
            f"runs, busy {duty:.0%} of the time; {verdict}; {self.errors} failed cycles"
        )


async def _start_sealer(server: Server, interval_s: float) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.sealer",
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
        result.without.append(await measure_cycles(server, backend, pairs, duration_s))
        proc = await _start_sealer(server, interval_s)
        try:
            result.with_sealer.append(await measure_cycles(server, backend, pairs, duration_s))
        finally:
            await _stop_sealer(proc, result)
    return result


def run_all(
    pairs: int,
    duration_s: float,
    run: Callable[[Coroutine[Any, Any, SealerComparison]], SealerComparison],
) -> list[SealerComparison]:
    """Compare on SQLite, then on PostgreSQL when reachable (`run` drives a coroutine)."""
    rounds = int(os.environ.get("BENCH_SEALER_ROUNDS", "2"))
    interval_s = float(os.environ.get("BENCH_SEALER_INTERVAL", "0.5"))
    results = []
    with running_server() as server:
        results.append(run(compare(server, "sqlite", pairs, duration_s, rounds, interval_s)))
    with postgres_database() as url:
        if url is None:
            print("sealer: PostgreSQL not reachable; measured on SQLite only", file=sys.stderr)
        else:
            with running_server(url) as server:
                results.append(
                    run(compare(server, "postgresql", pairs, duration_s, rounds, interval_s))
                )
    return results


# --- the sealer loop (a separate process, so it shares no interpreter lock with the load
# generator or the server: only the database and the CPUs) --------------------------------


def sealer_loop(interval_s: float) -> dict[str, Any]:
    from agent_broker import clock
    from agent_broker.config import Settings
    from agent_broker.db.engine import create_database
    from agent_broker.ledger import sealer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    db = create_database(Settings())
    figures: dict[str, Any] = {"runs": 0, "busy_s": 0.0, "verdict": "unknown", "error": None}
    started = time.perf_counter()
    try:
        while not stop.is_set():
            began = time.perf_counter()
            outcome = sealer.run(db.engine, now=clock.now(), margin=timedelta(0))
            figures["busy_s"] += time.perf_counter() - began
            figures["runs"] += 1
            figures["verdict"] = outcome.status
            stop.wait(interval_s)
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        figures["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        figures["loop_s"] = time.perf_counter() - started
        db.dispose()
    return figures


if __name__ == "__main__":
    print(json.dumps(sealer_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)))
