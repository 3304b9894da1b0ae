"""The fallback load generator, used when wrk is not installed: closed-loop keep-alive load
from this Python process, C connections each sending its next request as soon as the
previous response is read. It shares the CPUs with the server and spends more per request
than a bare route does, so it bounds the baseline: its ratios are not the reference
measurement (bench.wrk_load is)."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from bench.throughput import NO_RESPONSE
from bench.wire import read_response

# How long past the planned end in-flight requests may take before the run is abandoned
# (above SQLite's 15 s busy timeout, so a queued writer can still answer).
GRACE_S = 30.0


@dataclass
class LoadResult:
    duration_s: float
    latencies_s: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    timed_out: bool = False
    # CPU seconds this process (the load generator) used during the run.
    client_cpu_s: float = 0.0

    @property
    def responses(self) -> int:
        return sum(self.statuses.values())

    def percentile_ms(self, q: float) -> float | None:
        """Nearest-rank percentile, q in [0, 100]."""
        if not self.latencies_s:
            return None
        ordered = sorted(self.latencies_s)
        rank = max(1, round(q / 100 * len(ordered)))
        return ordered[min(rank, len(ordered)) - 1] * 1000


@dataclass
class _Plan:
    requests: Iterator[tuple[bytes, bytes | None]]  # (request, placeholder) in rotation
    end: float  # perf_counter time after which no request starts
    stop_after: int | None  # responses after which no request starts


async def run_load(
    host: str,
    port: int,
    requests: Sequence[tuple[bytes, bytes | None]],
    *,
    concurrency: int,
    duration_s: float,
    stop_after: int | None = None,
) -> LoadResult:
    """Send `requests` in rotation over `concurrency` connections for `duration_s`, or
    until `stop_after` responses. A request's placeholder, when not None, is replaced by a
    fresh UUID each time (e.g. an Idempotency-Key)."""
    start = time.perf_counter()
    result = LoadResult(duration_s=duration_s)
    plan = _Plan(itertools.cycle(requests), start + duration_s, stop_after)
    cpu_before = time.process_time()
    tasks = [asyncio.create_task(_connection(host, port, plan, result)) for _ in range(concurrency)]
    _, pending = await asyncio.wait(tasks, timeout=duration_s + GRACE_S)
    for task in pending:
        task.cancel()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, Exception):  # a bug here, not a server fault: show it
            raise outcome
    result.duration_s = min(duration_s, time.perf_counter() - start)
    result.timed_out = bool(pending)
    result.client_cpu_s = time.process_time() - cpu_before
    return result


def _more(plan: _Plan, result: LoadResult) -> bool:
    if plan.stop_after is not None and result.responses >= plan.stop_after:
        return False
    return time.perf_counter() < plan.end


async def _connection(host: str, port: int, plan: _Plan, result: LoadResult) -> None:
    writer: asyncio.StreamWriter | None = None
    try:
        while _more(plan, result):
            if writer is None:
                try:
                    reader, writer = await asyncio.open_connection(host, port)
                except OSError:
                    result.statuses[NO_RESPONSE] += 1
                    await asyncio.sleep(0.05)  # a refused connect would otherwise spin
                    continue
            payload, placeholder = next(plan.requests)
            if placeholder is not None:  # a fresh value, e.g. an Idempotency-Key
                payload = payload.replace(placeholder, str(uuid.uuid4()).encode())
            sent = time.perf_counter()
            writer.write(payload)
            try:
                response = await read_response(reader)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                # Reset, closed mid-response or unparseable: no response to count.
                result.statuses[NO_RESPONSE] += 1
                writer.close()
                writer = None
                continue
            result.latencies_s.append(time.perf_counter() - sent)
            result.statuses[response.status] += 1
            if response.closes:
                writer.close()
                writer = None
    finally:
        if writer is not None:
            writer.close()
