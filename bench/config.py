"""Benchmark settings, read from BENCH_* environment variables (see bench.run)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from bench.scenarios import SCENARIOS, Scenario


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Settings:
    duration_s: float
    warmup_s: float
    concurrency: int
    scenarios: tuple[Scenario, ...]  # the baseline first


def _positive(name: str, default: float, kind: type[int] | type[float]) -> Any:
    raw = os.environ.get(name, "").strip()
    try:
        value = kind(raw) if raw else kind(default)
    except ValueError:
        value = 0
    if value <= 0:
        what = "integer" if kind is int else "number"
        raise ConfigError(f"{name} must be a positive {what}, not {raw!r}")
    return value


def settings_from_env() -> Settings:
    baseline, *others = SCENARIOS
    wanted = [n.strip() for n in os.environ.get("BENCH_SCENARIOS", "").split(",") if n.strip()]
    unknown = set(wanted) - {s.name for s in SCENARIOS}
    if unknown:
        known = ", ".join(s.name for s in SCENARIOS)
        raise ConfigError(f"unknown BENCH_SCENARIOS {', '.join(sorted(unknown))}; known: {known}")
    chosen = [s for s in others if not wanted or s.name in wanted]
    return Settings(
        duration_s=_positive("BENCH_DURATION", 5, float),
        warmup_s=_positive("BENCH_WARMUP", 1, float),
        concurrency=_positive("BENCH_CONCURRENCY", 16, int),
        scenarios=(baseline, *chosen),
    )
