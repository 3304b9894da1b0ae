"""Issue 12's targets, judged from one run's figures. Each prints as one line:

    target: <name> ... measured <value> (p99 <x> ms) ... PASS|FAIL|SKIP

SKIP means the figure was not measured in this run (deselected, or PostgreSQL not
reachable); it counts as not passed in the summary line. A route ratio passes only when its
run was clean: error responses are cheap and would inflate the rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.cycle import CycleResult, pooled_cpu_ms_per_deal, pooled_p99_ms
from bench.events_log import EventsLogComparison
from bench.memory import FIRST_REQUESTS, MemoryResult
from bench.routes import Outcome
from bench.scenarios import SCENARIOS

# Route throughput as a share of the bare baseline's.
ROUTE_RATIOS = (("account", 0.25), ("feed", 0.15), ("listing", 0.10), ("thread", 0.15))
SQLITE_DEALS_PER_S = 300.0
POSTGRES_DEALS_PER_S = 150.0  # with POSTGRES_TARGET_WORKERS
POSTGRES_TARGET_WORKERS = 2
# Scaling: 2 workers must beat 1 outright; 4 workers may fall short of 2 by this much
# (on 2 cores, 4 workers add no CPU: the figure must hold, within run-to-run noise).
SCALING_TOLERANCE = 0.95
MEMORY_GROWTH = 0.20
# Issue 35: an escrow deal cycle (seven requests, counted when released) at no less than
# this share of the direct cycle's rate (five requests, counted when sealed), both on
# SQLite in the same run. Issue 34: the deal cycle with the events log at no less than
# this share of the same cycle without it.
ESCROW_RATIO = 0.8
EVENTS_LOG_RATIO = 0.9


@dataclass(frozen=True)
class Target:
    name: str
    measured: str | None  # None: not measured in this run
    p99: str | None = None  # milliseconds, as printed
    passed: bool = False

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "SKIP"
        return "PASS" if self.passed else "FAIL"

    def line(self) -> str:
        if self.measured is None:
            return f"target: {self.name} ... not measured ... SKIP"
        p99 = f" (p99 {self.p99} ms)" if self.p99 else ""
        return f"target: {self.name} ... measured {self.measured}{p99} ... {self.verdict}"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "measured": self.measured,
            "p99_ms": self.p99,
            "verdict": self.verdict,
        }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def route_targets(outcomes: Sequence[Outcome]) -> list[Target]:
    baseline, by_name = outcomes[0], {o.name: o for o in outcomes[1:]}
    targets = []
    routes = {s.name: f"{s.method} {s.path}" for s in SCENARIOS}  # named even if not run
    for name, minimum in ROUTE_RATIOS:
        title = f"{routes[name]} >= {minimum:.2f} x bare"
        outcome = by_name.get(name)
        ratio = outcome.ratio(baseline) if outcome else None
        if outcome is None or ratio is None:
            targets.append(Target(title, None))
            continue
        errors = f", {outcome.load.errors} errors" if outcome.load.flagged else ""
        targets.append(
            Target(
                title,
                f"{ratio:.3f} x bare{errors}",
                _ms(outcome.load.p99_ms),
                ratio >= minimum and not outcome.load.flagged,
            )
        )
    return targets


def sqlite_cycle_target(cycle: CycleResult | None) -> Target:
    title = f"deal cycle on SQLite, 1 worker >= {SQLITE_DEALS_PER_S:.0f} sealed deals/s"
    if cycle is None:
        return Target(title, None)
    return Target(
        title,
        f"{cycle.per_second:.1f} deals/s with {cycle.pairs} pairs",
        _ms(cycle.percentile_ms(0.99)),
        cycle.per_second >= SQLITE_DEALS_PER_S,
    )


def escrow_cycle_target(
    direct: CycleResult | None, escrow: CycleResult | None, offers: CycleResult | None = None
) -> Target:
    title = f"escrow cycle >= {ESCROW_RATIO} x direct (SQLite, 1 worker, deals/s)"
    if direct is None or escrow is None or not direct.per_second:
        return Target(title, None)
    ratio = escrow.per_second / direct.per_second
    failed = f", {escrow.failed} failed cycles" if escrow.failed else ""
    cpu = _cpu_per_deal(escrow, direct)
    # Judged per deal; the rate per request says what each escrow request costs.
    per_request = ratio * escrow.requests_per_deal / direct.requests_per_deal
    return Target(
        title,
        f"{ratio:.3f} x direct ({escrow.per_second:.1f} released vs {direct.per_second:.1f} "
        f"sealed deals/s; {escrow.requests_per_deal} vs {direct.requests_per_deal} requests "
        f"a deal, {per_request:.3f} x direct per request{cpu}){failed}"
        + _reference(direct, offers),
        _ms(escrow.percentile_ms(0.99)),
        ratio >= ESCROW_RATIO and not escrow.failed,
    )


def _reference(direct: CycleResult, offers: CycleResult | None) -> str:
    """The direct cycle with two more offers: as many requests as an escrow deal, the two
    extra ones the cheapest the cycle makes; what the escrow cycle would reach were delivery
    and acceptance as cheap as an offer and the held price free."""
    if offers is None or offers.failed or not offers.per_second:
        return ""
    return (
        f"; for reference, the direct cycle with two more offers: "
        f"{offers.per_second / direct.per_second:.3f} x direct ({offers.per_second:.1f} deals/s)"
    )


def _cpu_per_deal(escrow: CycleResult, direct: CycleResult) -> str:
    """The server's CPU per deal of each cycle: on a busy machine it holds better than the
    rates, which follow the CPU the server is given."""
    escrow_ms, direct_ms = (pooled_cpu_ms_per_deal([c]) for c in (escrow, direct))
    if escrow_ms is None or direct_ms is None:
        return ""
    return f"; server CPU {escrow_ms:.1f} vs {direct_ms:.1f} ms a deal"


def events_log_target(comparison: EventsLogComparison | None) -> Target:
    title = f"deal cycle with the events log >= {EVENTS_LOG_RATIO} x without (SQLite)"
    if comparison is None:
        return Target(title, None)
    problem = "" if comparison.healthy else ", switch or cycles failed"
    return Target(
        title,
        f"{comparison.ratio:.3f} x without ({comparison.per_second_with:.1f} vs "
        f"{comparison.per_second_without:.1f} sealed deals/s){problem}",
        _ms(pooled_p99_ms(comparison.with_log)),
        comparison.ratio >= EVENTS_LOG_RATIO and comparison.healthy,
    )


def postgres_targets(cycles: Sequence[CycleResult], clients: int) -> list[Target]:
    by_workers = {c.workers: c for c in cycles}
    rate_title = (
        f"deal cycle on PostgreSQL, {POSTGRES_TARGET_WORKERS} workers >= "
        f"{POSTGRES_DEALS_PER_S:.0f} sealed deals/s"
    )
    scaling_title = (
        f"PostgreSQL deals/s grow with workers (2 > 1, 4 >= {SCALING_TOLERANCE:.2f} x 2)"
    )
    clean_title = f"PostgreSQL: no 5xx and no failed cycles at {clients} concurrent clients"
    targets = []
    paired = by_workers.get(POSTGRES_TARGET_WORKERS)
    if paired is None:
        targets.append(Target(rate_title, None))
    else:
        targets.append(
            Target(
                rate_title,
                f"{paired.per_second:.1f} deals/s",
                _ms(paired.percentile_ms(0.99)),
                paired.per_second >= POSTGRES_DEALS_PER_S,
            )
        )
    if not all(n in by_workers for n in (1, 2, 4)):
        targets.append(Target(scaling_title, None))
    else:
        one, two, four = (by_workers[n] for n in (1, 2, 4))
        targets.append(
            Target(
                scaling_title,
                f"{one.per_second:.1f} / {two.per_second:.1f} / {four.per_second:.1f} deals/s "
                "with 1 / 2 / 4 workers",
                " / ".join(_ms(c.percentile_ms(0.99)) for c in (one, two, four)),
                two.per_second > one.per_second
                and four.per_second >= SCALING_TOLERANCE * two.per_second,
            )
        )
    if not cycles:
        targets.append(Target(clean_title, None))
    else:
        failed = sum(c.failed for c in cycles)
        server_errors = sum(c.server_errors for c in cycles)
        targets.append(
            Target(
                clean_title,
                f"{server_errors} cycles with a 5xx, {failed} failed cycles in all "
                f"({'/'.join(str(c.workers) for c in cycles)} workers)",
                " / ".join(_ms(c.percentile_ms(0.99)) for c in cycles),
                failed == 0,
            )
        )
    return targets


def memory_target(memory: MemoryResult | None, total: int) -> Target:
    title = (
        f"worker memory (RssAnon) after {total:,} requests within {MEMORY_GROWTH:.0%} of after "
        f"{FIRST_REQUESTS:,}"
    )
    if memory is None:
        return Target(title, None)
    return Target(
        title,
        f"{memory.growth:+.1%} ({memory.rss_first / 2**20:.1f} -> "
        f"{memory.rss_last / 2**20:.1f} MiB)",
        _ms(memory.rest.p99_ms),
        abs(memory.growth) <= MEMORY_GROWTH and not memory.flagged,
    )


def search_target(search_ms: tuple[float, float] | None) -> Target:
    title = "feed search page at 100,000 listings on SQLite < 20 ms (slowest of four queries)"
    if search_ms is None:
        return Target(title, None)
    mean_ms, p99_ms = search_ms
    return Target(title, f"{mean_ms:.1f} ms mean", _ms(p99_ms), mean_ms < 20.0)


def summary(targets: Sequence[Target]) -> str:
    passed = sum(t.verdict == "PASS" for t in targets)
    skipped = sum(t.verdict == "SKIP" for t in targets)
    note = f" ({skipped} not measured)" if skipped else ""
    return f"targets: {passed}/{len(targets)} PASS{note}"
