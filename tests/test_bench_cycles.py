"""The benchmark's deal-cycle arithmetic: runs pooled over rounds, and the escrow target's
line with its reference (docs/contributors/performance.md, "Escrow cycle and the events
log"). The runs themselves are `make bench`'s; these are figures made up to test the
sums."""

from __future__ import annotations

from collections import Counter

from bench.cycle import CYCLES, CycleResult, merged, pooled_cpu_ms_per_deal
from bench.targets import escrow_cycle_target


def _run(cycle: str, deals: int, *, cores: float | None = 1.0, **failures: int) -> CycleResult:
    return CycleResult(
        backend="sqlite",
        workers=1,
        pairs=32,
        cycle=cycle,
        deals=deals,
        seconds=5.0,
        latencies_s=[0.01 * (i + 1) for i in range(deals)],
        failures=Counter({k.replace("_", " "): n for k, n in failures.items()}),
        server_cores=cores,
        driver_cores=0.1,
    )


def test_the_reference_cycle_is_the_direct_one_with_two_more_offers() -> None:
    direct, offers = CYCLES["direct"], CYCLES["offers"]
    assert len(offers) == len(CYCLES["escrow"]) == len(direct) + 2
    assert offers[0] == direct[0] and offers[-1] == direct[-1]
    extra = offers[4:6]
    assert [path for _, path, *_ in extra] == ["/v1/threads/{thread}/offers"] * 2
    assert [who for _, _, who, *_ in extra] == ["seller", "buyer"]  # turns keep alternating
    assert not any(keyed for _, _, _, keyed, _ in extra)  # the cheapest: no Idempotency-Key


def test_merged_pools_the_rounds() -> None:
    first = _run("escrow", 1000, cores=1.0, deliver_409=1)
    second = _run("escrow", 1500, cores=0.5, deliver_409=2, accept_500=1)
    pooled = merged([first, second])
    assert (pooled.cycle, pooled.deals, pooled.seconds) == ("escrow", 2500, 10.0)
    assert pooled.per_second == 250.0
    assert len(pooled.latencies_s) == 2500
    assert pooled.failures == Counter({"deliver 409": 3, "accept 500": 1})
    assert pooled.server_errors == 1
    assert pooled.server_cores == 0.75
    # CPU a deal over both rounds: (1.0 x 5 s + 0.5 x 5 s) / 2,500 deals.
    assert pooled_cpu_ms_per_deal([first, second]) == 3.0
    # Without the server's CPU in one round, the pooled run claims none.
    assert merged([first, _run("escrow", 10, cores=None)]).server_cores is None


def test_the_escrow_target_is_judged_per_deal_with_the_reference_beside_it() -> None:
    direct = _run("direct", 2000)  # 400 deals/s
    offers = _run("offers", 1600)  # 320 deals/s: 0.8 of direct
    passing = escrow_cycle_target(direct, _run("escrow", 1600), offers)
    assert passing.passed
    line = passing.line()
    assert "measured 0.800 x direct (320.0 released vs 400.0 sealed deals/s" in line
    assert "1.120 x direct per request" in line
    assert "two more offers: 0.800 x direct (320.0 deals/s)" in line
    assert line.endswith("PASS")

    failing = escrow_cycle_target(direct, _run("escrow", 1590), offers)
    assert not failing.passed and failing.line().endswith("FAIL")
    # A failed escrow cycle fails the target whatever its rate; a failed reference is left
    # out of the line rather than shown as a figure.
    assert not escrow_cycle_target(direct, _run("escrow", 1800, deliver_409=1), offers).passed
    broken = escrow_cycle_target(direct, _run("escrow", 1600), _run("offers", 1, reply_500=1))
    assert "two more offers" not in broken.line() and broken.passed
    assert escrow_cycle_target(direct, None, offers).verdict == "SKIP"
