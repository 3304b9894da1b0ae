"""The asyncio client: the same operations, each awaited."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agent_broker.client.calls import ATTEMPTS, RETRY_STATUSES, Call
from agent_broker.client.operations import Operations
from agent_broker.client.payment import PAYMENT_REQUIRED, PAYMENT_SIGNATURE, payment_header
from agent_broker.client.sync import _body


class AsyncClient(Operations):
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
        """`wallet` (an eth-account key or LocalAccount): with no API key, a payable call's
        402 is paid with it (x402) and the account it opens keeps its key here."""
        self.api_key = api_key
        self._wallet = wallet
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._owns_http = http is None
        self._backoff = backoff_seconds

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def _run(self, call: Call) -> Any:  # type: ignore[override]
        headers = call.headers(self.api_key)  # once: a retry resends the same key
        for attempt in range(1, ATTEMPTS + 1):
            try:
                response = await self._send(call, headers)
                if self._payable(response, headers):
                    # Paid at once, within this attempt; a retry resends the same payment.
                    headers = {**headers, PAYMENT_SIGNATURE: self._pay(response)}
                    response = await self._send(call, headers)
            except httpx.TransportError:
                if attempt == ATTEMPTS:
                    raise
            else:
                if response.status_code not in RETRY_STATUSES or attempt == ATTEMPTS:
                    return self._answer(call, response)
            await asyncio.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    async def _send(self, call: Call, headers: dict[str, str]) -> httpx.Response:
        return await self._http.request(
            call.method, call.path, params=call.params or None, json=call.json, headers=headers
        )

    def _payable(self, response: httpx.Response, headers: dict[str, str]) -> bool:
        return bool(
            self._wallet is not None
            and response.status_code == 402
            and PAYMENT_REQUIRED in response.headers
            and "x-api-key" not in headers
            and PAYMENT_SIGNATURE not in headers
        )

    def _pay(self, response: httpx.Response) -> str:
        return payment_header(self._wallet, response.headers[PAYMENT_REQUIRED])

    def _answer(self, call: Call, response: httpx.Response) -> Any:
        body = _body(response)
        opened = body.get("new_account") if isinstance(body, dict) else None
        if isinstance(opened, dict) and opened.get("api_key"):
            self.api_key = opened["api_key"]  # a wallet's first payment opened the account
        result = call.answer(response.status_code, body)
        if call.keeps_key and getattr(result, "api_key", None):
            self.api_key = result.api_key
        return result
