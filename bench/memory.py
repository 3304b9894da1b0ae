"""Memory of the one service worker under a long mixed workload: its own memory (RssAnon,
the heap and everything else not backed by a file) after the first FIRST_REQUESTS
requests and again after `total` requests, on a fresh SQLite database seeded like the
route scenarios. Growth beyond what the first requests warm up (imports, caches, pools)
would be a leak: something kept per request. VmRSS is reported beside it; it also counts
the pages of the database file that SQLite has read through its memory map, which grow
with the database and belong to the operating system's page cache, not to the process."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from bench.generator import Generator
from bench.scenarios import SCENARIOS
from bench.server import Server, running_server
from bench.throughput import Throughput
from bench.wire import Client

FIRST_REQUESTS = 1_000
# Reads and writes in rotation (scenario, turns): account reads, feed pages, listing posts
# (each with a fresh Idempotency-Key) and thread reads; one request in eight a write.
MIX = (("account", 3), ("feed", 2), ("listing", 1), ("thread", 2))
# A request cut off when the generator stops may still be running in the server.
SETTLE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class MemoryResult:
    rss_first: int  # bytes, RssAnon after `first`
    rss_last: int  # bytes, RssAnon after `first` and `rest`
    first: Throughput
    rest: Throughput
    vm_rss_first: int = 0  # bytes, VmRSS (mapped database pages included)
    vm_rss_last: int = 0

    @property
    def requests(self) -> int:
        return self.first.requests + self.rest.requests

    @property
    def growth(self) -> float:
        return self.rss_last / self.rss_first - 1

    @property
    def flagged(self) -> bool:
        return self.first.flagged or self.rest.flagged

    def summary(self) -> str:
        rest = self.rest
        return (
            f"memory: worker RssAnon {_mib(self.rss_first)} after {self.first.requests:,} "
            f"requests, {_mib(self.rss_last)} after {self.requests:,} ({self.growth:+.1%}); "
            f"VmRSS {_mib(self.vm_rss_first)} -> {_mib(self.vm_rss_last)}; mixed "
            f"workload {rest.requests_per_s:.0f} req/s, p50 {_ms(rest.p50_ms)}, p99 "
            f"{_ms(rest.p99_ms)}, {self.first.errors + rest.errors} errors"
            + (f" !! statuses: {rest.statuses_text()}" if self.flagged else "")
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "mix": dict(MIX),
            "rss_first_bytes": self.rss_first,
            "requests_first": self.first.requests,
            "rss_last_bytes": self.rss_last,
            "vm_rss_first_bytes": self.vm_rss_first,
            "vm_rss_last_bytes": self.vm_rss_last,
            "requests_total": self.requests,
            "growth": round(self.growth, 4),
            "requests_per_s": round(self.rest.requests_per_s, 1),
            "p50_ms": _round(self.rest.p50_ms),
            "p99_ms": _round(self.rest.p99_ms),
            "errors": self.first.errors + self.rest.errors,
            "statuses": {str(s): n for s, n in sorted(self.rest.statuses.items())},
            "flagged": self.flagged,
        }


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


async def _settle(server: Server) -> None:
    """Wait until the server stops spending CPU (what was in flight has finished)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    before = server.cpu_seconds()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.3)
        now = server.cpu_seconds()
        if before is None or now is None or now - before < 0.01:
            return
        before = now


def _rss(server: Server, field: str = "RssAnon") -> int:
    rss = server.rss_bytes(field)
    if rss is None:
        raise RuntimeError(f"cannot read /proc/{server.pid}/status (Linux only)")
    return rss


async def _measure(server: Server, generator: Generator, total: int) -> MemoryResult:
    client = Client(server.host, server.port)
    by_name = {s.name: s for s in SCENARIOS}
    workload = []
    for name, turns in MIX:
        scenario = by_name[name]
        if scenario.setup is not None:
            scenario = await scenario.setup(client, scenario, server)
        workload.append((scenario, turns))
    first = await generator.run(server, workload, stop_after=FIRST_REQUESTS)
    await _settle(server)
    rss_first, vm_rss_first = _rss(server), _rss(server, "VmRSS")
    rest = await generator.run(server, workload, stop_after=max(1, total - first.requests))
    await _settle(server)
    return MemoryResult(rss_first, _rss(server), first, rest, vm_rss_first, _rss(server, "VmRSS"))


def measure_memory(generator: Generator, total: int, run) -> MemoryResult:  # noqa: ANN001
    """On a fresh service process and database (`run` drives a coroutine)."""
    with running_server() as server:
        return run(_measure(server, generator, total))
