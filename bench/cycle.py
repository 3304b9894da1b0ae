"""The full deal cycle under load: post a listing, open a thread, counter-offer, reply,
finalize (five requests). The escrow cycle posts an escrow listing instead (the buyer's
price is held when the thread opens and moves into escrow at the seal), then the seller
delivers and the buyer accepts, which pays the seller (seven requests); an escrow deal
counts once its escrow is released. The offers cycle is the direct one with two more offers
(seven requests, no escrow): the rate an escrow deal would reach if its two steps cost no
more than the cheapest requests of the direct cycle, the escrow target's reference.

Each trading pair (two funded traders with complete profiles) runs cycles back to back,
each trader on its own keep-alive connection, as an agent would hold one; the figure is
deals per second over the measured window, after a warm-up.

A cycle fails at the first refusal; failures are counted by step and status over the whole
run (warm-up included), 5xx apart from other refusals: a deadlock on PostgreSQL shows up
as a 500."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.postgres import fresh_database
from bench.scenarios import LISTING, run_seed
from bench.server import Server, running_cli, running_server
from bench.throughput import NO_RESPONSE
from bench.wire import Connection

# (name, path, who, idempotent, body)
Step = tuple[str, str, str, bool, Any]
NEGOTIATION: tuple[Step, ...] = (
    ("open", "/v1/listings/{listing}/threads", "buyer", True, {"diff": "2 days, $2.50"}),
    ("counter", "/v1/threads/{thread}/offers", "seller", False, {"diff": "3 days, $2.50"}),
    ("reply", "/v1/threads/{thread}/offers", "buyer", False, {"diff": "agreed: 3 days"}),
    ("finalize", "/v1/threads/{thread}/finalize", "seller", True, None),
)
STEPS: tuple[Step, ...] = (("post", "/v1/listings", "seller", True, LISTING), *NEGOTIATION)
# The operator evaluates (no evaluator named); the deadlines are the defaults.
ESCROW_LISTING = {**LISTING, "settlement": "escrow"}
ESCROW_STEPS: tuple[Step, ...] = (
    ("post", "/v1/listings", "seller", True, ESCROW_LISTING),
    *NEGOTIATION,
    ("deliver", "/v1/deals/{deal}/delivery", "seller", True, {"note": "delivered as agreed"}),
    ("accept", "/v1/deals/{deal}/acceptance", "buyer", True, None),
)
OPEN, COUNTER, REPLY, FINALIZE = NEGOTIATION
OFFERS_STEPS: tuple[Step, ...] = (
    STEPS[0],
    OPEN,
    COUNTER,
    REPLY,
    ("counter again", *COUNTER[1:]),
    ("reply again", *REPLY[1:]),
    FINALIZE,
)
CYCLES = {"direct": STEPS, "escrow": ESCROW_STEPS, "offers": OFFERS_STEPS}
SQLITE_CYCLES = tuple(CYCLES)  # the order each round runs them in


def percentile_ms(latencies_s: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of per-deal latencies, q in [0, 1]."""
    if not latencies_s:
        return None
    ordered = sorted(latencies_s)
    return ordered[max(0, min(len(ordered), round(q * len(ordered))) - 1)] * 1000


def pooled_per_second(results: Sequence[CycleResult]) -> float:
    """Deals per second over several runs' measured windows together."""
    seconds = sum(r.seconds for r in results)
    return sum(r.deals for r in results) / seconds if seconds else 0.0


def pooled_p99_ms(results: Sequence[CycleResult]) -> float | None:
    """p99 per deal over every run's deals."""
    return percentile_ms([s for r in results for s in r.latencies_s], 0.99)


def pooled_cpu_ms_per_deal(results: Sequence[CycleResult]) -> float | None:
    """The server's CPU per deal over the runs that measured it: on a busy machine it holds
    better than the rates, which follow the CPU the server is given."""
    measured = [(r.server_cores, r) for r in results if r.server_cores is not None and r.deals]
    if not measured:
        return None
    cpu_s = sum(cores * r.seconds for cores, r in measured)
    return cpu_s / sum(r.deals for _, r in measured) * 1000


@dataclass
class CycleResult:
    backend: str  # "sqlite" or "postgresql"
    workers: int
    pairs: int
    cycle: str = "direct"  # a key of CYCLES
    deals: int = 0  # sealed in the measured window
    seconds: float = 0.0  # the measured window
    latencies_s: list[float] = field(default_factory=list)  # per deal in the window
    failures: Counter[str] = field(default_factory=Counter)  # "step status" -> cycles
    # Cores used over the whole run, to tell a saturated server from a bound driver; the
    # server's only with one worker (with several, the pid is uvicorn's supervisor).
    server_cores: float | None = None
    driver_cores: float = 0.0

    @property
    def label(self) -> str:
        workers = f"{self.workers} worker" + ("s" if self.workers > 1 else "")
        kind = {"direct": "", "offers": "two more offers, "}.get(self.cycle, f"{self.cycle}, ")
        return f"{kind}{self.backend}, {workers}, {self.pairs} pairs"

    @property
    def requests_per_deal(self) -> int:
        return len(CYCLES[self.cycle])

    @property
    def per_second(self) -> float:
        return self.deals / self.seconds if self.seconds else 0.0

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    @property
    def server_errors(self) -> int:
        """Failed cycles whose refusal was a 5xx."""
        return sum(n for key, n in self.failures.items() if int(key.split()[1]) >= 500)

    def percentile_ms(self, q: float) -> float | None:
        return percentile_ms(self.latencies_s, q)

    def summary(self) -> str:
        refusals = ", ".join(f"{key} x{n}" for key, n in sorted(self.failures.items()))
        return (
            f"deal cycle ({self.label}): {self.per_second:.1f} {self.done} deals/s; "
            f"p50 {_ms(self.percentile_ms(0.5))}, p99 {_ms(self.percentile_ms(0.99))} per deal "
            f"({self.requests_per_deal} requests); cpu server/driver "
            f"{_pct(self.server_cores)}/{_pct(self.driver_cores)}"
            f"; {self.failed} failed cycles ({self.server_errors} with a 5xx)"
            + (f": {refusals}" if refusals else "")
        )

    @property
    def done(self) -> str:
        """What a counted deal has been through."""
        return "released" if self.cycle == "escrow" else "sealed"

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "cycle": self.cycle,
            "requests_per_deal": self.requests_per_deal,
            "workers": self.workers,
            "pairs": self.pairs,
            "concurrent_clients": 2 * self.pairs,
            "deals": self.deals,
            "seconds": round(self.seconds, 2),
            "deals_per_s": round(self.per_second, 1),
            "p50_ms": _round(self.percentile_ms(0.5)),
            "p99_ms": _round(self.percentile_ms(0.99)),
            "failed_cycles": self.failed,
            "failed_with_5xx": self.server_errors,
            "failures": dict(self.failures),
            "server_cpu": _round(self.server_cores, 2),
            "driver_cpu": _round(self.driver_cores, 2),
        }


def merged(results: Sequence[CycleResult]) -> CycleResult:
    """Several runs of one cycle as one: their windows, deals and refusals together."""
    first = results[0]
    out = CycleResult(first.backend, first.workers, first.pairs, first.cycle)
    for result in results:
        out.deals += result.deals
        out.seconds += result.seconds
        out.latencies_s += result.latencies_s
        out.failures.update(result.failures)
    cores = [r.server_cores for r in results if r.server_cores is not None]
    out.server_cores = sum(cores) / len(cores) if len(cores) == len(results) else None
    out.driver_cores = sum(r.driver_cores for r in results) / len(results)
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def _pct(cores: float | None) -> str:
    return "-" if cores is None else f"{100 * cores:.0f}%"


async def _seed_traders(server: Server, pairs: int) -> list[tuple[str, str]]:
    out = await run_seed(server, "traders", str(pairs))
    return [(seller, buyer) for seller, buyer in json.loads(out)]


async def _one_deal(
    traders: dict[str, tuple[str, Connection]], steps: Sequence[Step] = STEPS
) -> str | None:
    """One complete cycle: None when done, else "STEP STATUS" of the first refusal."""
    ids: dict[str, str] = {}
    for step, path, who, idempotent, body in steps:
        key, connection = traders[who]
        headers = {"x-api-key": key}
        if idempotent:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        try:
            response = await connection.request(
                "POST", path.format(**ids), headers=headers, json_body=body
            )
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            return f"{step} {NO_RESPONSE}"
        if response.status not in (200, 201):
            return f"{step} {response.status}"
        if step == "post":
            ids["listing"] = response.json()["id"]
        elif step == "open":
            ids["thread"] = response.json()["id"]
        elif step == "finalize":
            ids["deal"] = response.json()["id"]
    return None


async def measure_cycles(
    server: Server,
    backend: str,
    pairs: int,
    duration_s: float,
    warmup_s: float,
    cycle: str = "direct",
) -> CycleResult:
    """Run `pairs` trading pairs for `warmup_s` + `duration_s`; count the deals done (sealed;
    for an escrow cycle, released) in the last `duration_s`."""
    traders = await _seed_traders(server, pairs)
    steps = CYCLES[cycle]
    result = CycleResult(backend=backend, workers=server.workers, pairs=pairs, cycle=cycle)
    server_cpu = server.cpu_seconds() if server.workers == 1 else None
    driver_cpu = time.process_time()
    start = time.perf_counter()
    window = (start + warmup_s, start + warmup_s + duration_s)

    async def trade(seller: str, buyer: str) -> None:
        connections = {
            "seller": (seller, Connection(server.host, server.port)),
            "buyer": (buyer, Connection(server.host, server.port)),
        }
        try:
            while time.perf_counter() < window[1]:
                began = time.perf_counter()
                refusal = await _one_deal(connections, steps)
                done = time.perf_counter()
                if refusal is not None:
                    result.failures[refusal] += 1
                elif window[0] <= done <= window[1]:
                    result.deals += 1
                    result.latencies_s.append(done - began)
        finally:
            for _, connection in connections.values():
                connection.close()

    await asyncio.gather(*(trade(seller, buyer) for seller, buyer in traders))
    wall = time.perf_counter() - start
    result.seconds = duration_s
    result.driver_cores = (time.process_time() - driver_cpu) / wall
    server_cpu_after = server.cpu_seconds() if server_cpu is not None else None
    if server_cpu is not None and server_cpu_after is not None:
        result.server_cores = (server_cpu_after - server_cpu) / wall
    return result


def sqlite_cycles(
    pairs: int,
    duration_s: float,
    warmup_s: float,
    run,  # noqa: ANN001
    cycle: str = "direct",
) -> CycleResult:
    """The cycle on a fresh SQLite database, one worker (`run` drives a coroutine)."""
    with running_server() as server:
        return run(measure_cycles(server, "sqlite", pairs, duration_s, warmup_s, cycle))


def postgres_cycles(
    admin_dsn: str,
    redis_url: str | None,
    workers: tuple[int, ...],
    pairs: int,
    duration_s: float,
    warmup_s: float,
    run,  # noqa: ANN001
) -> Iterator[CycleResult]:
    """The cycle under `agent-broker serve --workers N` for each N, each on a fresh
    PostgreSQL database (so every N starts alike). Raises bench.postgres.Unavailable."""
    for count in workers:
        with fresh_database(admin_dsn) as url, running_cli(url, count, redis_url) as server:
            yield run(measure_cycles(server, "postgresql", pairs, duration_s, warmup_s))
