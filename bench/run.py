"""Throughput and latency of agent-broker routes relative to a bare FastAPI route.

Run from the repository root with `make bench` (or `.venv/bin/python -m bench.run`). It
starts the service on a fresh SQLite database in a temporary directory (one uvicorn
worker on 127.0.0.1), loads each scenario over keep-alive connections, prints a table
and writes the figures to bench/results/latest.json. The server and the load generator
share the machine's CPUs, so compare the ratio column rather than absolute figures.

Environment:
    BENCH_DURATION     measured seconds per scenario (default 5)
    BENCH_WARMUP       unmeasured warm-up seconds before each (default 1)
    BENCH_CONCURRENCY  concurrent connections (default 16)
    BENCH_SCENARIOS    comma-separated scenario names to run (default: all of
                       bench.scenarios.SCENARIOS); the baseline always runs

Exit status: 0 if every scenario ran clean, 1 if any had errors or timed out, 2 if the
benchmark could not run.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.load import NO_RESPONSE, LoadResult, run_load
from bench.scenarios import SCENARIOS, Scenario
from bench.server import ROOT, Server, ServerError, running_server
from bench.wire import Client

RESULTS = ROOT / "bench" / "results" / "latest.json"


@dataclass(frozen=True)
class Settings:
    duration_s: float
    warmup_s: float
    concurrency: int
    scenarios: tuple[Scenario, ...]


@dataclass(frozen=True)
class Outcome:
    scenario: Scenario
    load: LoadResult
    server_cpu_s: float | None

    @property
    def flagged(self) -> bool:
        return self.load.errors > 0 or self.load.timed_out or self.load.requests == 0


def _number(name: str, default: float, kind: type[int] | type[float]) -> Any:
    raw = os.environ.get(name, "").strip()
    try:
        value = kind(raw) if raw else kind(default)
    except ValueError:
        raise SystemExit(f"{name} must be a {kind.__name__}, not {raw!r}") from None
    if value <= 0:
        raise SystemExit(f"{name} must be positive")
    return value


def settings_from_env() -> Settings:
    baseline, *others = SCENARIOS
    wanted = [n.strip() for n in os.environ.get("BENCH_SCENARIOS", "").split(",") if n.strip()]
    unknown = set(wanted) - {s.name for s in SCENARIOS}
    if unknown:
        known = ", ".join(s.name for s in SCENARIOS)
        raise SystemExit(f"unknown BENCH_SCENARIOS {', '.join(sorted(unknown))}; known: {known}")
    chosen = [s for s in others if not wanted or s.name in wanted]
    return Settings(
        duration_s=_number("BENCH_DURATION", 5, float),
        warmup_s=_number("BENCH_WARMUP", 1, float),
        concurrency=_number("BENCH_CONCURRENCY", 16, int),
        scenarios=(baseline, *chosen),
    )


async def measure(server: Server, settings: Settings) -> list[Outcome]:
    client = Client(server.host, server.port)
    outcomes = []
    for scenario in settings.scenarios:
        if scenario.setup is not None:
            scenario = await scenario.setup(client, scenario)
        cpu_before = server.cpu_seconds()
        load = await run_load(
            server.host,
            server.port,
            scenario.encode(server.host, server.port),
            concurrency=settings.concurrency,
            duration_s=settings.duration_s,
            warmup_s=settings.warmup_s,
        )
        cpu_after = server.cpu_seconds()
        server_cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        outcomes.append(Outcome(scenario, load, server_cpu))
    return outcomes


def _run_async(main: Coroutine[Any, Any, list[Outcome]]) -> tuple[list[Outcome], str]:
    """Run on uvloop when installed: the generator then costs the shared CPUs less."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main), "asyncio"
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main), "uvloop"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _statuses(load: LoadResult) -> str:
    names = {NO_RESPONSE: "no response"}
    return ", ".join(f"{names.get(s, s)} x{n}" for s, n in sorted(load.statuses.items()))


def table(outcomes: list[Outcome], settings: Settings) -> str:
    base_rps = outcomes[0].load.requests_per_s
    width = max(len(o.scenario.label) for o in outcomes)
    lines = [
        f"{'scenario':<{width}}  {'req/s':>7}  {'p50 ms':>7}  {'p99 ms':>7}  {'errors':>6}"
        f"  {'ratio':>5}  {'cpu srv/gen':>11}"
    ]
    for o in outcomes:
        load = o.load
        ratio = load.requests_per_s / base_rps if base_rps else 0.0
        wall = settings.warmup_s + settings.duration_s
        cpu = f"{_pct(o.server_cpu_s, wall)}/{_pct(load.client_cpu_s, wall)}"
        line = (
            f"{o.scenario.label:<{width}}  {load.requests_per_s:>7.0f}"
            f"  {_ms(load.percentile_ms(50)):>7}  {_ms(load.percentile_ms(99)):>7}"
            f"  {load.errors:>6}  {ratio:>5.2f}  {cpu:>11}"
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


def _pct(cpu_s: float | None, wall_s: float) -> str:
    return "-" if cpu_s is None else f"{100 * cpu_s / wall_s:.0f}%"


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def report(
    outcomes: list[Outcome], settings: Settings, server: Server, loop: str
) -> dict[str, Any]:
    base_rps = outcomes[0].load.requests_per_s
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
                "ratio": round(o.load.requests_per_s / base_rps, 3) if base_rps else None,
                # Fractions of one core over warm-up plus measured time.
                "server_cpu": None if o.server_cpu_s is None else round(o.server_cpu_s / wall, 3),
                "load_generator_cpu": round(o.load.client_cpu_s / wall, 3),
            }
            for o in outcomes
        ],
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def main() -> int:
    settings = settings_from_env()
    try:
        with running_server() as server:
            outcomes, loop = _run_async(measure(server, settings))
    except ServerError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    print(table(outcomes, settings))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report(outcomes, settings, server, loop), indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if any(o.flagged for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
