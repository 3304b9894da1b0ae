"""Load from wrk, the reference generator: C code on its own threads, so it costs the
shared CPUs far less per request than any Python client and does not bound the baseline.

The requests come from a plan file read by bench/wrk/plan.lua, which also gives each
request of a scenario that needs one a fresh Idempotency-Key and prints the run's figures
(requests, latency percentiles, statuses, socket errors) as JSON."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import resource
import signal
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.scenarios import Scenario
from bench.throughput import NO_RESPONSE, Throughput

SCRIPT = Path(__file__).with_name("wrk") / "plan.lua"
RESULT_PREFIX = b"BENCH-RESULT "
STOPPED_LINE = b"BENCH-STOPPED"
# wrk's per-request timeout (it also sizes its latency histogram): above SQLite's 15 s
# busy timeout, so a queued writer still answers and is counted with its latency.
REQUEST_TIMEOUT_S = 30
# How long past the planned end the run may take before it is abandoned.
GRACE_S = 30.0


class WrkError(RuntimeError):
    """wrk could not run the plan (a bad script or argument): nothing was measured."""


Workload = Sequence[tuple[Scenario, int]]  # scenarios in rotation, with their turns


def plan_text(workload: Workload) -> str:
    lines = []
    for scenario, weight in workload:
        headers = {k.lower(): v for k, v in scenario.headers.items()}
        body = None
        if scenario.body is not None:
            body = json.dumps(scenario.body, separators=(",", ":"))  # ASCII: no length doubt
            headers.setdefault("content-type", "application/json")
        fields = [("request", scenario.method, scenario.path)]
        fields += [("header", name, value) for name, value in headers.items()]
        if body is not None:
            fields.append(("body", body))
        if scenario.unique_header:
            fields.append(("unique", scenario.unique_header))
        fields.append(("weight", str(weight)))
        for line in fields:
            if any("\t" in part or "\n" in part for part in line):
                raise WrkError(f"scenario {scenario.name}: a tab or newline in {line!r}")
            lines.append("\t".join(line))
    return "\n".join(lines) + "\n"


async def run_wrk(
    wrk: str,
    host: str,
    port: int,
    workload: Workload,
    *,
    threads: int,
    connections: int,
    duration_s: float,
    stop_after: int | None,
    token: str,
) -> Throughput:
    """Run `workload` for `duration_s` (rounded up to whole seconds: wrk's -d), or until
    `stop_after` responses (split evenly between the threads; `duration_s` is then a cap)."""
    threads = min(threads, connections)
    per_thread = 0 if stop_after is None else math.ceil(stop_after / threads)
    limit_s = math.ceil(duration_s)
    with tempfile.TemporaryDirectory(prefix="agent-broker-bench-wrk-") as tmp:
        plan = Path(tmp) / "plan.tsv"
        plan.write_text(plan_text(workload))
        command = (
            *(wrk, "-t", str(threads), "-c", str(connections), "-d", f"{limit_s}s"),
            *("--timeout", f"{REQUEST_TIMEOUT_S}s", "-s", str(SCRIPT), f"http://{host}:{port}/"),
            *("--", str(plan), str(per_thread), token),
        )
        cpu_before = _children_cpu_s()
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        watcher = asyncio.create_task(_stop_when_threads_stop(proc, threads))
        try:
            async with asyncio.timeout(limit_s + GRACE_S):
                out, _ = await asyncio.gather(proc.stdout.read(), proc.wait())
            timed_out = False
        except TimeoutError:
            proc.kill()
            out, timed_out = b"", True
            await proc.wait()
        finally:
            stopped_at, stderr = await watcher
        elapsed = (stopped_at or time.perf_counter()) - started
        cpu_s = _children_cpu_s() - cpu_before
    if timed_out:
        return Throughput("wrk", 0, elapsed, {}, {}, True, cpu_s)
    return _figures(out, stderr, stop_after is not None, elapsed, cpu_s, proc.returncode)


async def _stop_when_threads_stop(
    proc: asyncio.subprocess.Process, threads: int
) -> tuple[float | None, bytes]:
    """Read wrk's stderr; once every thread has stopped early, interrupt wrk (it would
    otherwise sleep out its whole -d). Returns when they stopped, and the other lines."""
    assert proc.stderr is not None
    stopped, stopped_at, other = 0, None, []
    async for line in proc.stderr:
        if line.strip() != STOPPED_LINE:
            other.append(line)
            continue
        stopped += 1
        if stopped == threads:
            stopped_at = time.perf_counter()
            break
    # A SIGINT taken by a thread still winding down does not wake wrk's main thread, so
    # repeat it until wrk has printed its figures and exited.
    while stopped_at is not None and proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.5):
                other.append(await proc.stderr.read())
                await proc.wait()
    return stopped_at, b"".join(other)


def _figures(
    out: bytes, stderr: bytes, stopped_early: bool, elapsed: float, cpu_s: float, code: int | None
) -> Throughput:
    line = next((ln for ln in out.splitlines() if ln.startswith(RESULT_PREFIX)), None)
    if line is None:
        detail = (stderr or out).decode(errors="replace").strip()[-1500:]
        raise WrkError(f"wrk exited with status {code} and no figures: {detail}")
    figures = json.loads(line[len(RESULT_PREFIX) :])
    statuses = {int(status): n for status, n in figures["statuses"].items()}
    errors = figures["errors"]
    # Socket errors and timeouts got no response; "status" errors are among `statuses`.
    failed = sum(errors[kind] for kind in ("connect", "read", "write", "timeout"))
    if failed:
        statuses[NO_RESPONSE] = failed
    latency = figures["latency_us"]
    # wrk's own duration runs to its exit, past the early stop of a stop-after run.
    seconds = elapsed if stopped_early else figures["duration_us"] / 1e6
    return Throughput(
        generator="wrk",
        requests=figures["requests"],
        seconds=seconds,
        statuses=statuses,
        latency_ms={q: latency[q] / 1000 for q in ("p50", "p90", "p99", "max")},
        timed_out=False,
        generator_cpu_s=cpu_s,
    )


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
