"""Closed-loop keep-alive load: C connections, each sending its next request as soon as
the previous response is read, for a warm-up and then a measured window."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from bench.wire import read_response

# Status recorded for a request that got no HTTP response (connection refused, reset...).
NO_RESPONSE = 0
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
    def requests(self) -> int:
        """Responses received in the window, whatever their status."""
        return len(self.latencies_s)

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.duration_s

    @property
    def errors(self) -> int:
        """Non-2xx responses plus requests that got no response."""
        return sum(n for status, n in self.statuses.items() if not 200 <= status < 300)

    def percentile_ms(self, q: float) -> float | None:
        """Nearest-rank percentile, q in [0, 100]."""
        if not self.latencies_s:
            return None
        ordered = sorted(self.latencies_s)
        rank = max(1, round(q / 100 * len(ordered)))
        return ordered[min(rank, len(ordered)) - 1] * 1000


async def run_load(
    host: str,
    port: int,
    request: bytes,
    *,
    placeholder: bytes | None = None,
    concurrency: int,
    duration_s: float,
    warmup_s: float,
) -> LoadResult:
    """Send `request` over `concurrency` connections; count what completes in the window
    [start + warmup_s, start + warmup_s + duration_s]."""
    result = LoadResult(duration_s=duration_s)
    start = time.perf_counter()
    window = (start + warmup_s, start + warmup_s + duration_s)
    cpu_before = time.process_time()
    tasks = [
        asyncio.create_task(_connection(host, port, request, placeholder, window, result))
        for _ in range(concurrency)
    ]
    _, pending = await asyncio.wait(tasks, timeout=warmup_s + duration_s + GRACE_S)
    for task in pending:
        task.cancel()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, Exception):  # a bug here, not a server fault: show it
            raise outcome
    result.timed_out = bool(pending)
    result.client_cpu_s = time.process_time() - cpu_before
    return result


async def _connection(
    host: str,
    port: int,
    request: bytes,
    placeholder: bytes | None,
    window: tuple[float, float],
    result: LoadResult,
) -> None:
    writer: asyncio.StreamWriter | None = None
    try:
        while time.perf_counter() < window[1]:
            if writer is None:
                try:
                    reader, writer = await asyncio.open_connection(host, port)
                except OSError:
                    _record(result, window, None, time.perf_counter(), NO_RESPONSE)
                    await asyncio.sleep(0.05)  # a refused connect would otherwise spin
                    continue
            payload = request
            if placeholder is not None:  # a fresh value, e.g. an Idempotency-Key
                payload = request.replace(placeholder, str(uuid.uuid4()).encode())
            sent = time.perf_counter()
            writer.write(payload)
            try:
                response = await read_response(reader)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                # Reset, closed mid-response or unparseable: no response to count.
                _record(result, window, None, time.perf_counter(), NO_RESPONSE)
                writer.close()
                writer = None
                continue
            done = time.perf_counter()
            _record(result, window, done - sent, done, response.status)
            if response.closes:
                writer.close()
                writer = None
    finally:
        if writer is not None:
            writer.close()


def _record(
    result: LoadResult,
    window: tuple[float, float],
    latency: float | None,
    done: float,
    status: int,
) -> None:
    if window[0] <= done <= window[1]:
        if latency is not None:  # a failure has no meaningful latency
            result.latencies_s.append(latency)
        result.statuses[status] += 1
