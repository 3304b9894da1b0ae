"""What a soak run found, and its printed summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.soak_accounts import Trader
from bench.soak_checks import Check
from bench.soak_http import Tally
from bench.soak_killer import KillLog
from bench.soak_outages import OutageLog

if TYPE_CHECKING:
    from bench.soak_options import SoakOptions


@dataclass
class SoakReport:
    options: SoakOptions
    tally: Tally = field(default_factory=Tally)
    kills: KillLog = field(default_factory=KillLog)
    outages: OutageLog = field(default_factory=OutageLog)
    traders: list[Trader] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    load_seconds: float = 0.0
    server_errors: list[str] = field(default_factory=list)  # logged by the service

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    def summary(self) -> str:
        o = self.options
        rounds = sum(t.rounds for t in self.traders)
        deals = sum(t.deals for t in self.traders)
        escrow_deals = sum(t.escrow_deals for t in self.traders)
        lines = [
            f"soak: {self.load_seconds:.1f} s of load, {o.clients} clients, {o.workers} "
            f"workers, one SIGKILLed every {o.kill_every:g} s; PostgreSQL outage: "
            f"{o.postgres_outage}, Redis outage: {o.redis_outage}",
            f"rounds {rounds}, deals sealed {deals} (and {escrow_deals} in escrow), accounts "
            "registered during the load "
            f"{sum(len(t.newcomers) for t in self.traders)}",
            f"{'route':<46} {'2xx':>6} {'4xx':>5} {'503':>5} {'5xx':>5} {'lost':>5}",
        ]
        answered: Counter[tuple[str, int]] = Counter()  # (route, status class)
        for (route, status), count in self.tally.answered.items():
            answered[(route, 503 if status == 503 else status // 100)] += count
        lost = Counter(route for route, _ in self.tally.connection_failures)
        for route in sorted({route for route, _ in answered} | set(lost)):
            counts = [answered[(route, c)] for c in (2, 4, 503, 5)]
            lines.append(
                f"{route:<46} {counts[0]:>6} {counts[1]:>5} {counts[2]:>5} {counts[3]:>5} "
                f"{lost[route]:>5}"
            )
        lines += [f"[{'PASS' if c.passed else 'FAIL'}] {c.name}: {c.detail}" for c in self.checks]
        if self.server_errors:
            lines.append("the service logged errors:")
            lines += [f"  {line}" for line in self.server_errors[:10]]
        lines.append("soak passed" if self.passed else "soak FAILED")
        return "\n".join(lines)
