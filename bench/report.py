"""The results: a plain table for the terminal and a JSON document for later comparison."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from bench.config import Settings
from bench.cycle import CycleResult
from bench.events_log import EventsLogComparison
from bench.generator import Generator
from bench.memory import MemoryResult
from bench.routes import Outcome
from bench.sealer import SealerComparison
from bench.server import ROOT
from bench.targets import Target


def table(outcomes: Sequence[Outcome], settings: Settings, generator: Generator) -> str:
    width = max(len(o.label) for o in outcomes)
    lines = [
        f"{'scenario':<{width}}  {'req/s':>7}  {'p50 ms':>7}  {'p99 ms':>7}  {'errors':>6}"
        f"  {'ratio':>5}  {'cpu srv/gen':>11}"
    ]
    for o in outcomes:
        load = o.load
        cpu = f"{_pct(o.server_cpu)}/{_pct(load.generator_cores)}"
        line = (
            f"{o.label:<{width}}  {load.requests_per_s:>7.0f}"
            f"  {_fixed(load.p50_ms):>7}  {_fixed(load.p99_ms):>7}"
            f"  {load.errors:>6}  {_fixed(o.ratio(outcomes[0]), 2):>5}  {cpu:>11}"
        )
        if load.flagged:
            why = "timed out; " if load.timed_out else ""
            line += f"  !! {why}statuses: {load.statuses_text() or 'none'}"
        lines.append(line)
    threads = f", {min(generator.threads, settings.concurrency)} thread(s)" if generator.wrk else ""
    lines.append(
        f"(load: {generator.name}{threads}, {settings.concurrency} connections, "
        f"{settings.duration_s:g} s measured after {settings.warmup_s:g} s warm-up; ratio = "
        "req/s over the bare app's; cpu = % of one core, server/load generator)"
    )
    return "\n".join(lines)


def as_json(
    settings: Settings,
    generator: Generator,
    outcomes: Sequence[Outcome],
    scan_ms: float,
    cycles: Sequence[CycleResult],
    memory: MemoryResult | None,
    sealers: Sequence[SealerComparison],
    targets: Sequence[Target],
    elapsed_s: float,
    events_log: EventsLogComparison | None = None,
) -> dict[str, Any]:
    chosen = asdict(settings)
    chosen["scenarios"] = [s.name for s in settings.scenarios]
    return {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
        },
        "settings": chosen,
        "load_generator": {
            "name": generator.name,
            "path": generator.wrk,
            "threads": generator.threads if generator.wrk else None,
            # The Python fallback's figures are bounded by its own cost (see bench.generator).
            "reference_measurement": generator.wrk is not None,
        },
        "elapsed_s": round(elapsed_s, 1),
        "routes": [_route_json(o, outcomes[0]) for o in outcomes],
        "scanner_mean_ms": round(scan_ms, 3),
        "deal_cycles": [c.as_json() for c in cycles],
        "events_log": events_log.as_json() if events_log else None,
        "memory": memory.as_json() if memory else None,
        "sealer": [s.as_json() for s in sealers],
        "targets": [t.as_json() for t in targets],
    }


def _route_json(o: Outcome, baseline: Outcome) -> dict[str, Any]:
    load = o.load
    return {
        "name": o.name,
        "label": o.label,
        "server_command": o.server_command,
        "requests": load.requests,
        "seconds": round(load.seconds, 3),
        "requests_per_s": round(load.requests_per_s, 1),
        **{f"{q}_ms": _round(v) for q, v in load.latency_ms.items()},
        "errors": load.errors,
        "statuses": {str(s): n for s, n in sorted(load.statuses.items())},
        "timed_out": load.timed_out,
        "flagged": load.flagged,
        "ratio": _round(o.ratio(baseline), 3),
        # Fractions of one core.
        "server_cpu": _round(o.server_cpu),
        "load_generator_cpu": _round(load.generator_cores),
    }


def _fixed(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _pct(cores: float | None) -> str:
    return "-" if cores is None else f"{100 * cores:.0f}%"


def _commit() -> str | None:
    """HEAD's short hash, "-dirty" when the working tree differs. Plumbing only, which
    never writes the index: others may be using the repository meanwhile."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return None
        dirty = _git("diff-index", "--quiet", "HEAD", "--").returncode != 0
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
