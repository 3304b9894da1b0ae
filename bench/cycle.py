"""The full deal cycle under load: post a listing, open a thread, counter-offer, reply,
finalize. Each pair of traders runs cycles back to back; the figure is sealed deals per
second over the measured window. Run against SQLite and, when reachable, PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from bench.scenarios import LISTING, run_seed
from bench.server import Server, running_server
from bench.wire import Client

PG_DSN = os.environ.get("BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass
class CycleResult:
    backend: str
    deals: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies_s: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.deals / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float | None:
        if not self.latencies_s:
            return None
        ordered = sorted(self.latencies_s)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def _seed_traders(server: Server, pairs: int) -> list[tuple[str, str]]:
    out = await run_seed(server, "traders", str(pairs))
    return [tuple(pair) for pair in json.loads(out)]


async def _one_deal(client: Client, seller: str, buyer: str) -> bool:
    """One complete cycle; False at the first refusal."""

    def auth(key: str, idempotent: bool = False) -> dict[str, str]:
        headers = {"x-api-key": key}
        if idempotent:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        return headers

    steps = [
        ("POST", "/v1/listings", seller, True, LISTING),
        ("POST", "/v1/listings/{listing}/threads", buyer, True, {"diff": "2 days, $2.50"}),
        ("POST", "/v1/threads/{thread}/offers", seller, False, {"diff": "3 days, $2.50"}),
        ("POST", "/v1/threads/{thread}/offers", buyer, False, {"diff": "agreed: 3 days"}),
        ("POST", "/v1/threads/{thread}/finalize", seller, True, None),
    ]
    ids: dict[str, str] = {}
    for method, path, key, idempotent, body in steps:
        response = await client.request(
            method, path.format(**ids), headers=auth(key, idempotent), json_body=body
        )
        if response.status not in (200, 201):
            return False
        if path == "/v1/listings":
            ids["listing"] = response.json()["id"]
        elif path.endswith("/threads"):
            ids["thread"] = response.json()["id"]
    return True


async def measure_cycles(
    server: Server, backend: str, pairs: int, duration_s: float
) -> CycleResult:
    traders = await _seed_traders(server, pairs)
    client = Client(server.host, server.port)
    result = CycleResult(backend=backend)
    end = time.perf_counter() + duration_s

    async def trade(seller: str, buyer: str) -> None:
        while time.perf_counter() < end:
            started = time.perf_counter()
            if await _one_deal(client, seller, buyer):
                result.deals += 1
                result.latencies_s.append(time.perf_counter() - started)
            else:
                result.errors += 1

    started = time.perf_counter()
    await asyncio.gather(*(trade(seller, buyer) for seller, buyer in traders))
    result.seconds = time.perf_counter() - started
    return result


@contextmanager
def postgres_database() -> Iterator[str | None]:
    """A throwaway database on the local PostgreSQL, or None when none is reachable."""
    try:
        import psycopg

        admin = psycopg.connect(PG_DSN, autocommit=True, connect_timeout=3)
    except Exception:  # noqa: BLE001 - any failure means "not available"
        yield None
        return
    name = f"broker_bench_{os.getpid()}"
    with admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        base = PG_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_all(pairs: int, duration_s: float, run) -> list[CycleResult]:  # noqa: ANN001
    """Measure on SQLite, then on PostgreSQL when reachable (`run` drives a coroutine)."""
    results = []
    with running_server() as server:
        results.append(run(measure_cycles(server, "sqlite", pairs, duration_s)))
    with postgres_database() as url:
        if url is None:
            print("deal cycle: PostgreSQL not reachable; measured on SQLite only", file=sys.stderr)
        else:
            with running_server(url) as server:
                results.append(run(measure_cycles(server, "postgresql", pairs, duration_s)))
    return results
