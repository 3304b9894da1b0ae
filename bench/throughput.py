"""One load run's figures, whichever generator produced them."""

from __future__ import annotations

from dataclasses import dataclass

# Status recorded for requests that got no HTTP response (socket errors, timeouts).
NO_RESPONSE = 0


@dataclass(frozen=True)
class Throughput:
    generator: str  # "wrk" or "python"
    requests: int  # responses received, whatever their status
    seconds: float  # the measured window
    statuses: dict[int, int]  # status -> responses; NO_RESPONSE counts failed requests
    latency_ms: dict[str, float | None]  # "p50", "p90", "p99", "max"
    timed_out: bool  # the run had to be abandoned
    generator_cpu_s: float  # CPU the load generator used during the run

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def generator_cores(self) -> float | None:
        """Cores the load generator used during the window."""
        return self.generator_cpu_s / self.seconds if self.seconds else None

    @property
    def errors(self) -> int:
        """Non-2xx responses plus requests that got no response."""
        return sum(n for status, n in self.statuses.items() if not 200 <= status < 300)

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    @property
    def p50_ms(self) -> float | None:
        return self.latency_ms.get("p50")

    @property
    def p99_ms(self) -> float | None:
        return self.latency_ms.get("p99")

    @property
    def flagged(self) -> bool:
        """The figures are not to be trusted: errors, a hung run or nothing measured."""
        return self.errors > 0 or self.timed_out or self.requests == 0

    def statuses_text(self) -> str:
        names = {NO_RESPONSE: "no response"}
        return ", ".join(f"{names.get(s, s)} x{n}" for s, n in sorted(self.statuses.items()))
