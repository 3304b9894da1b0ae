"""The load generator for the throughput and memory runs: wrk when it is on PATH (or named
by BENCH_WRK), otherwise the Python fallback (bench.load), whose figures are bounded by
its own cost on the shared CPUs."""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass

from bench.load import run_load
from bench.server import Server
from bench.throughput import Throughput
from bench.wrk_load import Workload, run_wrk

# A stop-after run slower than this (responses per second) is abandoned as hung.
SLOWEST_RATE = 20.0

FALLBACK_WARNING = (
    "warning: {why}; the load comes from the Python generator (bench/load.py), which shares "
    "the CPUs with the server and spends more per request than the bare route: the figures "
    "are generator-bound and the ratios are not the reference measurement. `apt-get install "
    "wrk` gives it."
)


@dataclass(frozen=True)
class Generator:
    wrk: str | None  # wrk's path; None: the Python fallback
    threads: int  # wrk threads
    connections: int

    @property
    def name(self) -> str:
        return "wrk" if self.wrk else "python"

    def warning(self, wrk_setting: str) -> str | None:
        """What to print when the figures are not the reference measurement."""
        if self.wrk:
            return None
        why = {"": "wrk is not on PATH", "0": "BENCH_WRK=0"}.get(
            wrk_setting, f"BENCH_WRK={wrk_setting} is not an executable"
        )
        return FALLBACK_WARNING.format(why=why)

    async def run(
        self,
        server: Server,
        workload: Workload,
        *,
        duration_s: float | None = None,
        stop_after: int | None = None,
    ) -> Throughput:
        """Load `server` with `workload` (scenarios in rotation) for `duration_s`, or until
        `stop_after` responses."""
        if stop_after is not None:
            # A cap only, for a server that stops answering.
            duration_s = max(60.0, stop_after / SLOWEST_RATE)
        elif duration_s is None:
            raise ValueError("a load run needs duration_s or stop_after")
        if self.wrk:
            return await run_wrk(
                self.wrk,
                server.host,
                server.port,
                workload,
                threads=self.threads,
                connections=self.connections,
                duration_s=duration_s,
                stop_after=stop_after,
                # wrk builds fresh values (Idempotency-Keys) from it and counters that
                # start again with every wrk process, so each process needs its own.
                token=secrets.token_hex(6),
            )
        return await self._run_python(server, workload, duration_s, stop_after)

    async def _run_python(
        self, server: Server, workload: Workload, duration_s: float, stop_after: int | None
    ) -> Throughput:
        requests = []
        for scenario, weight in workload:
            encoded = scenario.encode(server.host, server.port)
            requests += [(encoded, scenario.placeholder)] * weight
        load = await run_load(
            server.host,
            server.port,
            requests,
            concurrency=self.connections,
            duration_s=duration_s,
            stop_after=stop_after,
        )
        return Throughput(
            generator="python",
            requests=len(load.latencies_s),
            seconds=load.duration_s,
            statuses=dict(load.statuses),
            latency_ms={
                name: load.percentile_ms(q)
                for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100))
            },
            timed_out=load.timed_out,
            generator_cpu_s=load.client_cpu_s,
        )


def choose(wrk_setting: str, threads: int, connections: int) -> Generator:
    """`wrk_setting`: "" finds wrk on PATH, "0" forces the fallback, else wrk's path."""
    wrk = None if wrk_setting == "0" else shutil.which(wrk_setting or "wrk")
    return Generator(wrk, threads, connections)
