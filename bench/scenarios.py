"""What the benchmark measures. A scenario is one request repeated under load; `setup`
runs once before the load (against the live server) and returns the scenario to run,
typically with credentials or ids filled in. Scenarios run in list order against one
database, so what one leaves behind (e.g. accounts) is there for the next.

To add one, append to SCENARIOS, e.g.
    Scenario("feed", "GET", "/v1/feed", setup=with_new_account)
    Scenario("listing", "POST", "/v1/listings", body={...}, setup=<one that also credits>)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench.wire import Client, encode_request

# Served by bench.app. The driver does not import the app, so a broken app shows up as
# a server that fails to start, with its log.
BARE_PATH = "/bench/bare"


@dataclass(frozen=True)
class Scenario:
    name: str  # short key, as given in BENCH_SCENARIOS
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None  # sent as JSON when not None
    setup: Setup | None = None

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    def encode(self, host: str, port: int) -> bytes:
        return encode_request(self.method, self.path, host, port, self.headers, self.body)


Setup = Callable[[Client, Scenario], Awaitable[Scenario]]


class SetupError(RuntimeError):
    """A setup request was refused: the scenario cannot run as designed."""


async def register_account(client: Client) -> str:
    """A new account's API key."""
    response = await client.request(
        "POST", "/v1/account/register", json_body={"accepted_terms": True}
    )
    if response.status != 201:
        raise SetupError(f"registering an account answered {response.status}: {response.body!r}")
    return str(response.json()["api_key"])


async def with_new_account(client: Client, scenario: Scenario) -> Scenario:
    key = await register_account(client)
    return replace(scenario, headers={**scenario.headers, "x-api-key": key})


# The first is the baseline every other scenario is compared with; it always runs.
SCENARIOS: list[Scenario] = [
    Scenario("bare", "GET", BARE_PATH),
    Scenario("account", "GET", "/v1/account", setup=with_new_account),
    Scenario("register", "POST", "/v1/account/register", body={"accepted_terms": True}),
]
