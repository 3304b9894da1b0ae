"""What the benchmark measures. A scenario is one request repeated under load; `setup`
runs once before the load (against the live server) and returns the scenario to run,
typically with credentials or ids filled in. Scenarios run in list order against one
database, so what one leaves behind (e.g. accounts) is there for the next.

To add one, append to SCENARIOS. A scenario whose requests must differ (an
Idempotency-Key per request) names that header in `unique_header`: the load generator
gives every request a fresh value there (wrk: run token, thread and counter; the Python
fallback: a UUID).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench import bare
from bench.server import ROOT, Server
from bench.wire import Client, encode_request


@dataclass(frozen=True)
class Scenario:
    name: str  # short key, as given in BENCH_SCENARIOS
    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None  # sent as JSON when not None
    setup: Setup | None = None
    unique_header: str | None = None  # given a fresh value on every request
    note: str = ""  # shown after the request in the table

    @property
    def placeholder(self) -> bytes | None:
        return UNIQUE_PLACEHOLDER.encode() if self.unique_header else None

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}" + (f" ({self.note})" if self.note else "")

    def encode(self, host: str, port: int) -> bytes:
        headers = dict(self.headers)
        if self.unique_header:
            headers[self.unique_header] = UNIQUE_PLACEHOLDER
        return encode_request(self.method, self.path, host, port, headers, self.body)


# As long as any UUID, so replacing it keeps the request's length.
UNIQUE_PLACEHOLDER = str(uuid.UUID(int=0))
FEED_LISTINGS = 10_000


Setup = Callable[[Client, Scenario, Server], Awaitable[Scenario]]


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


async def with_new_account(client: Client, scenario: Scenario, server: Server) -> Scenario:
    key = await register_account(client)
    return replace(scenario, headers={**scenario.headers, "x-api-key": key})


# The seeded account's key per database: each server under test has its own.
_seeded_keys: dict[str, str] = {}


async def run_seed(server: Server, *args: str) -> bytes:
    """Run `python -m bench.seed ARGS` against the server's database; its stdout (JSON)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.seed",
        *args,
        cwd=ROOT,
        env=server.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise SetupError(f"bench.seed {' '.join(args)} failed: {err.decode()[-2000:]}")
    return out


async def with_seeded_market(client: Client, scenario: Scenario, server: Server) -> Scenario:
    """A funded account and FEED_LISTINGS live listings, seeded once per database."""
    database = server.env["BROKER_DATABASE_URL"]
    if database not in _seeded_keys:
        out = await run_seed(server, str(FEED_LISTINGS))
        _seeded_keys[database] = json.loads(out)["api_key"]
    return replace(scenario, headers={**scenario.headers, "x-api-key": _seeded_keys[database]})


LISTING = {
    "title": "Benchmark listing",
    "category": "data_processing",
    "listing_type": "sell",
    "price_micro": 2_500_000,
    "body": "I normalise columns, fix encodings and drop duplicate rows. Up to 1 GB per job.",
}


async def _expect(client: Client, status: int, method: str, path: str, **kwargs: Any) -> Any:
    response = await client.request(method, path, **kwargs)
    if response.status != status:
        raise SetupError(f"{method} {path} answered {response.status}: {response.body!r}")
    return response.json()


async def with_open_thread(client: Client, scenario: Scenario, server: Server) -> Scenario:
    """Two traders and an open thread between them; the opener reads it, which embeds the
    poster's reputation record (facets, stats and scorecard)."""
    seller, buyer = json.loads(await run_seed(server, "traders", "1"))[0]
    listing = await _expect(
        client,
        201,
        "POST",
        "/v1/listings",
        headers={"x-api-key": seller, "Idempotency-Key": str(uuid.uuid4())},
        json_body=LISTING,
    )
    thread = await _expect(
        client,
        201,
        "POST",
        f"/v1/listings/{listing['id']}/threads",
        headers={"x-api-key": buyer, "Idempotency-Key": str(uuid.uuid4())},
        json_body={"diff": "I can take this on for the listed price."},
    )
    return replace(
        scenario,
        path=scenario.path.format(thread=thread["id"]),
        headers={**scenario.headers, "x-api-key": buyer},
    )


# Served by bench.bare in its own process; every other figure is compared with it.
BARE = Scenario("bare", "GET", bare.PATH, note="bare FastAPI, own process")

# Served by the service, in this order.
SCENARIOS: list[Scenario] = [
    Scenario("health", "GET", "/health"),
    Scenario("account", "GET", "/v1/account", setup=with_new_account),
    Scenario("register", "POST", "/v1/account/register", body={"accepted_terms": True}),
    Scenario(
        "feed",
        "GET",
        "/v1/feed?limit=20",
        setup=with_seeded_market,
        note=f"{FEED_LISTINGS:,} live listings",
    ),
    Scenario(
        "listing",
        "POST",
        "/v1/listings",
        body=LISTING,
        setup=with_seeded_market,
        unique_header="Idempotency-Key",
    ),
    Scenario("thread", "GET", "/v1/threads/{thread}", setup=with_open_thread),
]
