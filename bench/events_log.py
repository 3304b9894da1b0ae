"""What the events log costs the deal cycle (issue 34: within 10%).

Every account's events are written to its log in the transaction that makes them
(agent_broker.webhooks.service._write_events), and the service has no setting to stop it.
So the benchmark serves the service through `app_factory` below: the same app, plus a
bench-only switch on the log's write. SIGUSR1 makes agent_broker.webhooks.repository.log_event
(called only from _write_events) do nothing; SIGUSR2 puts it back. Everything else the
cycle does, the outbox for accounts with an endpoint included, stays as it is.

The deal cycle (bench.cycle) runs in alternating rounds on one SQLite database, one
worker: with the log, then without, so drift weighs on both sides alike. The figure is
the ratio of sealed deals per second with the log to without (target: at least 0.90).
The log's row count, read after each round, must grow in every round with it and in
none without it: otherwise the switch did not do what the figure assumes."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI

from bench.cycle import (
    CycleResult,
    measure_cycles,
    pooled_cpu_ms_per_deal,
    pooled_p99_ms,
    pooled_per_second,
)
from bench.server import Server, running_server

TARGET_RATIO = 0.90
APP = "bench.events_log:app_factory"
LOG_TABLE = "account_events"


def app_factory() -> FastAPI:
    """The service as `agent-broker serve` builds it, its events log switchable by signal."""
    from agent_broker.app import app_factory as service_factory
    from agent_broker.webhooks import repository

    writes = repository.log_event

    def skip(*_: Any, **__: Any) -> None:
        return None

    def switch(signum: int, _frame: Any) -> None:
        repository.log_event = skip if signum == signal.SIGUSR1 else writes

    signal.signal(signal.SIGUSR1, switch)
    signal.signal(signal.SIGUSR2, switch)
    return service_factory()


@dataclass
class EventsLogComparison:
    with_log: list[CycleResult] = field(default_factory=list)
    without_log: list[CycleResult] = field(default_factory=list)
    # Rows the log gained in each round: (with, without) per round.
    rows: list[tuple[int, int]] = field(default_factory=list)

    @property
    def per_second_with(self) -> float:
        return pooled_per_second(self.with_log)

    @property
    def per_second_without(self) -> float:
        return pooled_per_second(self.without_log)

    @property
    def cpu_ms_with(self) -> float | None:
        return pooled_cpu_ms_per_deal(self.with_log)

    @property
    def cpu_ms_without(self) -> float | None:
        return pooled_cpu_ms_per_deal(self.without_log)

    @property
    def ratio(self) -> float:
        base = self.per_second_without
        return self.per_second_with / base if base else 0.0

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.with_log + self.without_log)

    @property
    def switched(self) -> bool:
        """The log grew in every round with it and in none without it."""
        return bool(self.rows) and all(on > 0 and off == 0 for on, off in self.rows)

    @property
    def healthy(self) -> bool:
        return self.switched and not self.failed

    def as_json(self) -> dict[str, Any]:
        return {
            "backend": "sqlite",
            "deals_per_s_with_log": round(self.per_second_with, 1),
            "deals_per_s_without_log": round(self.per_second_without, 1),
            "p99_ms_with_log": _round(pooled_p99_ms(self.with_log)),
            "p99_ms_without_log": _round(pooled_p99_ms(self.without_log)),
            "ratio": round(self.ratio, 3),
            "target_ratio": TARGET_RATIO,
            "server_cpu_ms_per_deal_with_log": _round(self.cpu_ms_with),
            "server_cpu_ms_per_deal_without_log": _round(self.cpu_ms_without),
            "log_rows_per_round": [list(r) for r in self.rows],
            "failed_cycles": self.failed,
        }

    def summary(self) -> str:
        rows = ", ".join(f"{on}/{off}" for on, off in self.rows)
        switched = "" if self.switched else "; !! the switch did not hold"
        return (
            f"events log (sqlite): {self.per_second_with:.1f} sealed deals/s with the log "
            f"(p99 {_ms(pooled_p99_ms(self.with_log))}) vs {self.per_second_without:.1f} "
            f"without (p99 {_ms(pooled_p99_ms(self.without_log))}): ratio {self.ratio:.2f} "
            f"(target >= {TARGET_RATIO:.2f}); server CPU {_ms(self.cpu_ms_with)} vs "
            f"{_ms(self.cpu_ms_without)} a deal; log rows written per round with/without: "
            f"{rows}{switched}; {self.failed} failed cycles"
        )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _log_rows(server: Server) -> int:
    path = server.env["BROKER_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {LOG_TABLE}").fetchone()[0])  # noqa: S608


async def compare(
    server: Server, pairs: int, duration_s: float, rounds: int
) -> EventsLogComparison:
    result = EventsLogComparison()
    for _ in range(rounds):
        grown = []
        for signum, into in (
            (signal.SIGUSR2, result.with_log),
            (signal.SIGUSR1, result.without_log),
        ):
            os.kill(server.pid, signum)
            before = _log_rows(server)
            into.append(await measure_cycles(server, "sqlite", pairs, duration_s, 0))
            grown.append(_log_rows(server) - before)
        result.rows.append((grown[0], grown[1]))
    os.kill(server.pid, signal.SIGUSR2)
    return result


def run(
    pairs: int,
    duration_s: float,
    rounds: int,
    drive: Callable[[Coroutine[Any, Any, EventsLogComparison]], EventsLogComparison],
) -> EventsLogComparison:
    """The comparison on a fresh SQLite database (`drive` runs a coroutine)."""
    with running_server(app=APP) as server:
        return drive(compare(server, pairs, duration_s, rounds))
