"""Throughput of single routes: the bare baseline in its own process, then each service
scenario on one service worker over a fresh SQLite database, each after an unmeasured
warm-up of the same load."""

from __future__ import annotations

from dataclasses import dataclass

from bench.config import Settings
from bench.generator import Generator
from bench.scenarios import BARE, Scenario
from bench.server import Server, running_bare, running_server
from bench.throughput import Throughput
from bench.wire import Client


@dataclass(frozen=True)
class Outcome:
    name: str  # the scenario's key
    label: str  # what the table shows: method, route template, note
    load: Throughput
    server_cpu_s: float | None  # over the measured window
    server_command: str

    def ratio(self, baseline: Outcome) -> float | None:
        base = baseline.load.requests_per_s
        return self.load.requests_per_s / base if base else None

    @property
    def server_cpu(self) -> float | None:
        """Cores the server used during the window."""
        if self.server_cpu_s is None or not self.load.seconds:
            return None
        return self.server_cpu_s / self.load.seconds


async def _measure(
    generator: Generator, server: Server, scenario: Scenario, label: str, settings: Settings
) -> Outcome:
    workload = [(scenario, 1)]
    await generator.run(server, workload, duration_s=settings.warmup_s)  # figures discarded
    cpu_before = server.cpu_seconds()
    load = await generator.run(server, workload, duration_s=settings.duration_s)
    cpu_after = server.cpu_seconds()
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return Outcome(scenario.name, label, load, cpu, " ".join(server.command))


async def measure_routes(generator: Generator, settings: Settings) -> list[Outcome]:
    """The baseline first, then settings.scenarios in order."""
    with running_bare() as bare:
        outcomes = [await _measure(generator, bare, BARE, BARE.label, settings)]
    with running_server() as server:
        client = Client(server.host, server.port)
        for scenario in settings.scenarios:
            label = scenario.label  # the route template, before setup fills in ids
            if scenario.setup is not None:
                scenario = await scenario.setup(client, scenario, server)
            outcomes.append(await _measure(generator, server, scenario, label, settings))
    return outcomes
