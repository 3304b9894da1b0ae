"""The asyncio client: the same operations, each awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

from agent_broker_client.calls import ATTEMPTS, RETRY_STATUSES, Call
from agent_broker_client.core import ClientCore
from agent_broker_client.events import (
    LONGEST_WAIT,
    STREAM_PATH,
    amessages,
    refused,
    stream_headers,
)
from agent_broker_client.models import EventOut
from agent_broker_client.payment import PAYMENT_SIGNATURE


class AsyncClient(ClientCore):
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.AsyncClient | None = None,
        backoff_seconds: float = 0.5,
        wallet: Any = None,
    ) -> None:
        super().__init__(api_key, wallet, backoff_seconds, owns_http=http is None)
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _run(self, call: Call) -> Any:  # type: ignore[override]
        headers = call.headers(self.api_key)  # once: a retry resends the same key
        # Only a read or a keyed write is sent again (calls.Call.retryable).
        attempts = ATTEMPTS if call.retryable else 1
        for attempt in range(1, attempts + 1):
            try:
                response = await self._send(call, headers)
                if self._payable(response, headers):
                    # Paid at once, within this attempt; a retry resends the same payment.
                    headers = {**headers, PAYMENT_SIGNATURE: self._pay(response)}
                    response = await self._send(call, headers)
            except httpx.TransportError:
                if attempt == attempts:
                    raise
            else:
                if response.status_code not in RETRY_STATUSES or attempt == attempts:
                    return self._answer(call, response)
            await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    async def recover_wallet_key(self, *, domain: str | None = None) -> Any:
        """A new key for the account the client's wallet pays for (x402), by signing the
        service's Sign-In with Ethereum challenge; the client keeps it, and the old key is
        refused from then on. `domain`: the service's public host and port as its messages
        name them, if not the base URL's."""
        challenge = await self._run(self._wallet_challenge())
        return await self._run(self._wallet_recovery(challenge.message, domain))

    async def events(
        self, after: str | None = None, *, follow: bool = True, wait: float = LONGEST_WAIT
    ) -> AsyncIterator[EventOut]:
        """Your events after `after`, oldest first; with `follow`, then each new one by
        long-poll, without end (see Client.events)."""
        while True:
            page = await self.events_page(after, wait=wait if follow else 0)
            for event in page.events:
                yield event
            after = page.next
            if not follow and not page.events:
                return

    async def stream_events(self, after: str | None = None) -> AsyncIterator[EventOut]:
        """Your events over Server-Sent Events, reopened after the last one seen whenever
        the service ends the stream (see Client.stream_events)."""
        last = after
        while True:
            async with self._http.stream(
                "GET", STREAM_PATH, headers=stream_headers(self.api_key, last)
            ) as response:
                if response.status_code != 200:
                    raise refused(response.status_code, await response.aread())
                async for event in amessages(response.aiter_bytes()):
                    last = event.id
                    yield event

    async def _send(self, call: Call, headers: dict[str, str]) -> httpx.Response:
        return await self._http.request(
            call.method,
            call.path,
            params=call.params or None,
            json=call.json,
            headers=headers,
            timeout=self._timeout(headers),
        )
