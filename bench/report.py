"""The results: a plain table for the terminal and a JSON document for later comparison."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.config import Settings
from bench.load import NO_RESPONSE, LoadResult
from bench.scenarios import Scenario
from bench.server import ROOT, Server


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    load: LoadResult
    server_cpu_s: float | None  # over warm-up plus measured time

    @property
    def flagged(self) -> bool:
        """The figures are not to be trusted: errors, a hung run or nothing measured."""
        return self.load.errors > 0 or self.load.timed_out or self.load.requests == 0

    def ratio(self, baseline: Outcome) -> float | None:
        base = baseline.load.requests_per_s
        return self.load.requests_per_s / base if base else None


def table(outcomes: list[Outcome], settings: Settings) -> str:
    wall = settings.warmup_s + settings.duration_s
    width = max(len(o.scenario.label) for o in outcomes)
    lines = [
        f"{'scenario':<{width}}  {'req/s':>7}  {'p50 ms':>7}  {'p99 ms':>7}  {'errors':>6}"
        f"  {'ratio':>5}  {'cpu srv/gen':>11}"
    ]
    for o in outcomes:
        load = o.load
        ratio = o.ratio(outcomes[0])
        cpu = f"{_pct(o.server_cpu_s, wall)}/{_pct(load.client_cpu_s, wall)}"
        line = (
            f"{o.scenario.label:<{width}}  {load.requests_per_s:>7.0f}"
            f"  {_fixed(load.percentile_ms(50)):>7}  {_fixed(load.percentile_ms(99)):>7}"
            f"  {load.errors:>6}  {_fixed(ratio, 2):>5}  {cpu:>11}"
        )
        if o.flagged:
            why = "timed out; " if load.timed_out else ""
            line += f"  !! {why}statuses: {_statuses(load) or 'none'}"
        lines.append(line)
    lines.append(
        f"({settings.concurrency} connections, {settings.duration_s:g} s measured after"
        f" {settings.warmup_s:g} s warm-up; cpu = % of one core, server/load generator)"
    )
    return "\n".join(lines)


def as_json(
    outcomes: list[Outcome], settings: Settings, server: Server, loop: str
) -> dict[str, Any]:
    wall = settings.warmup_s + settings.duration_s
    return {
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
        },
        "settings": {
            "duration_s": settings.duration_s,
            "warmup_s": settings.warmup_s,
            "concurrency": settings.concurrency,
            "scenarios": [s.name for s in settings.scenarios],
            "baseline": outcomes[0].scenario.name,
            "database": "sqlite",
            "server_command": " ".join(server.command),
            "load_generator_loop": loop,
        },
        "results": [
            {
                "name": o.scenario.name,
                "label": o.scenario.label,
                "requests": o.load.requests,
                "requests_per_s": round(o.load.requests_per_s, 1),
                "p50_ms": _round(o.load.percentile_ms(50)),
                "p90_ms": _round(o.load.percentile_ms(90)),
                "p99_ms": _round(o.load.percentile_ms(99)),
                "max_ms": _round(o.load.percentile_ms(100)),
                "errors": o.load.errors,
                "statuses": {str(s): n for s, n in sorted(o.load.statuses.items())},
                "timed_out": o.load.timed_out,
                "flagged": o.flagged,
                "ratio": _round(o.ratio(outcomes[0]), 3),
                # Fractions of one core.
                "server_cpu": _round(None if o.server_cpu_s is None else o.server_cpu_s / wall),
                "load_generator_cpu": _round(o.load.client_cpu_s / wall),
            }
            for o in outcomes
        ],
    }


def _fixed(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _pct(cpu_s: float | None, wall_s: float) -> str:
    return "-" if cpu_s is None else f"{100 * cpu_s / wall_s:.0f}%"


def _statuses(load: LoadResult) -> str:
    names = {NO_RESPONSE: "no response"}
    return ", ".join(f"{names.get(s, s)} x{n}" for s, n in sorted(load.statuses.items()))


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None
