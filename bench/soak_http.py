"""Requests under fire: each call is retried when its connection fails (the worker holding
it was killed) or when it is answered 503 (a database outage: after its Retry-After, with
the same Idempotency-Key, as a client would); every answer is tallied per route, and
answers to Idempotency-Key calls are kept so that re-sending them can be checked against
what came first."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.wire import Client

# What a killed worker's connections look like from here: reset, or closed mid-answer.
CONNECTION_FAILURES = (ConnectionError, asyncio.IncompleteReadError)
MAX_ATTEMPTS = 12
RETRY_PAUSE_S = 0.1  # times the attempt number
UNAVAILABLE = 503
RETRY_AFTER_CAP_S = 3.0  # a 503's Retry-After is waited for, up to this
REQUEST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Answer:
    status: int  # 0 when no attempt got an answer
    body: Any  # parsed JSON, or None
    retried: bool  # an earlier attempt of this call lost its connection

    @property
    def reason(self) -> str | None:
        return self.body.get("reason") if isinstance(self.body, dict) else None


@dataclass(frozen=True)
class Exchange:
    """An Idempotency-Key call that succeeded, and the first answer seen for it."""

    method: str
    route: str
    path: str
    headers: Mapping[str, str]
    body: Any
    answer: Answer


@dataclass
class Tally:
    answered: Counter[tuple[str, int]] = field(default_factory=Counter)  # (route, status)
    connection_failures: list[tuple[str, float]] = field(default_factory=list)  # (route, when)
    unavailable: list[tuple[str, float]] = field(default_factory=list)  # 503s: (route, when)
    # Writes that were answered 503 and then, retried with the same key, succeeded.
    unavailable_writes_landed: int = 0
    problems: list[str] = field(default_factory=list)  # anything that fails the soak
    exchanges: list[Exchange] = field(default_factory=list)
    replays: int = 0

    def succeeded(self, route: str) -> int:
        return sum(n for (r, status), n in self.answered.items() if r == route and status < 300)

    def server_errors(self) -> int:
        """Answers of 5xx other than 503 (which is judged against the outages)."""
        return sum(
            n for (_, status), n in self.answered.items() if status >= 500 and status != UNAVAILABLE
        )


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode("utf-8", "replace")


class Caller:
    def __init__(self, host: str, port: int, tally: Tally, replay_fraction: float) -> None:
        self._client = Client(host, port, timeout=REQUEST_TIMEOUT_S)
        self._tally = tally
        self._replay_fraction = replay_fraction
        self._rng = random.Random()

    async def call(
        self,
        method: str,
        route: str,
        *,
        params: Mapping[str, str] | None = None,
        api_key: str | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
        expect: Collection[int] = (200, 201, 204),
        after_retry: Mapping[int, str | None] | None = None,
    ) -> Answer:
        """One call, retried on connection failure. `after_retry` maps a status to the
        reason (None: any) it is accepted with once an attempt was lost, since the lost one
        may have landed: a second rating is then a duplicate_rating."""
        headers = {"x-api-key": api_key} if api_key else {}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        path = route.format(**(params or {}))
        answer = await self._send(method, route, path, headers, body)
        if answer.status in expect:
            if idempotency_key:
                await self._keep(Exchange(method, route, path, headers, body, answer))
            return answer
        accepted = after_retry or {}
        if answer.retried and accepted.get(answer.status, "") in (None, answer.reason):
            return answer
        if answer.status:  # 0: _send has said why already
            self.fail(f"{method} {route} answered {answer.status}: {answer.body!r:.300}")
        return answer

    def fail(self, problem: str) -> None:
        self._tally.problems.append(problem)

    async def replay(self, first: Exchange) -> None:
        """Re-send a completed Idempotency-Key call; it must answer as it did first."""
        self._tally.replays += 1
        again = await self._send(first.method, first.route, first.path, first.headers, first.body)
        wanted = expected_replay(first)
        if (again.status, _as_replayed(again.body)) != (wanted[0], _as_replayed(wanted[1])):
            self.fail(
                f"replay of {first.method} {first.path} answered {again.status} "
                f"{again.body!r:.300}, first {first.answer.status} {first.answer.body!r:.300}"
            )

    async def _keep(self, exchange: Exchange) -> None:
        self._tally.exchanges.append(exchange)
        if self._rng.random() < self._replay_fraction:
            await self.replay(exchange)

    async def _send(
        self, method: str, route: str, path: str, headers: Mapping[str, str], body: Any
    ) -> Answer:
        label = f"{method} {route}"
        unavailable = False
        for attempt in range(1, MAX_ATTEMPTS + 1):
            pause = RETRY_PAUSE_S * attempt
            try:
                response = await self._client.request(method, path, headers=headers, json_body=body)
            except CONNECTION_FAILURES:
                self._tally.connection_failures.append((label, time.monotonic()))
            except TimeoutError:
                asked = time.gmtime(time.time() - REQUEST_TIMEOUT_S)
                self.fail(
                    f"{label}: no answer within {REQUEST_TIMEOUT_S:.0f} s "
                    f"(asked at {time.strftime('%H:%M:%S', asked)} UTC)"
                )
            else:
                self._tally.answered[(label, response.status)] += 1
                parsed = _parsed(response.body)
                if response.status == UNAVAILABLE and "retry-after" in response.headers:
                    # A passing outage (judged against the outages' windows): retried as
                    # the client is told to, after Retry-After, the same key with it.
                    self._tally.unavailable.append((label, time.monotonic()))
                    unavailable = True
                    pause = min(float(response.headers["retry-after"]), RETRY_AFTER_CAP_S)
                else:
                    if response.status >= 500:
                        request_id = response.headers.get("x-request-id", "-")
                        self.fail(f"{label} answered {response.status} ({request_id}): {parsed!r}")
                    elif unavailable and method != "GET" and response.status < 300:
                        self._tally.unavailable_writes_landed += 1
                    return Answer(response.status, parsed, retried=attempt > 1)
            await asyncio.sleep(pause)
        self.fail(f"{label}: no answer in {MAX_ATTEMPTS} attempts")
        return Answer(0, None, retried=True)


def _as_replayed(body: Any) -> Any:
    """What a replay must repeat of an answer. An escrow deal (finalize, the escrow steps)
    is rendered again as its caller reads it now: the escrow may have moved on since, and
    its settlement moved purge_at; the price it holds may not change."""
    if not (isinstance(body, dict) and isinstance(body.get("escrow"), dict)):
        return body
    kept = {key: value for key, value in body.items() if key not in ("escrow", "purge_at")}
    return {**kept, "escrow_amount_micro": body["escrow"].get("amount_micro")}


def expected_replay(first: Exchange) -> tuple[int, Any]:
    """What re-sending `first` must answer: the same status and body, except registration,
    whose replay is documented as 200 with the account id only (the API key is shown once)."""
    answer = first.answer
    if first.route == "/v1/account/register" and answer.status == 201:
        return 200, {"account_id": answer.body["account_id"], "existing": True}
    return answer.status, answer.body
