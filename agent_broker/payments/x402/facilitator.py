"""The facilitator that verifies and settles payments, reached with the x402 package's own
client over the operator's guarded outbound client (no redirects, capped body, deadline).
Every call runs with no database transaction open."""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass, replace
from typing import Any

import httpx
from x402.http.facilitator_client import HTTPFacilitatorClient
from x402.http.facilitator_client_base import FacilitatorConfig

from agent_broker.config import Settings
from agent_broker.http.outbound import OutboundClient, OutboundPolicy

# Settling waits for the chain: allow a facilitator longer than other operator hosts.
SETTLE_DEADLINE_SECONDS = 30.0


@dataclass(frozen=True)
class _Response:
    """The parts of an httpx response the x402 client reads."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


class _GuardedTransport:
    """Stands in for the httpx.AsyncClient HTTPFacilitatorClient would make: the same
    `post(url, headers=, json=)`, sent through OutboundClient."""

    def __init__(self, outbound: OutboundClient) -> None:
        self._outbound = outbound

    async def post(
        self, url: str, *, headers: dict[str, str] | None = None, json: Any = None
    ) -> _Response:
        answer = await self._outbound.post(
            url, headers=headers, json=json, deadline_seconds=SETTLE_DEADLINE_SECONDS
        )
        return _Response(answer.status_code, answer.headers, answer.body)


def facilitator_client(settings: Settings) -> HTTPFacilitatorClient:
    policy = replace(OutboundPolicy.for_operator(settings), read_timeout=SETTLE_DEADLINE_SECONDS)
    transport = _GuardedTransport(OutboundClient(policy))
    return HTTPFacilitatorClient(
        FacilitatorConfig(
            url=settings.x402_facilitator_url,
            timeout=SETTLE_DEADLINE_SECONDS,
            http_client=transport,
        )
    )
