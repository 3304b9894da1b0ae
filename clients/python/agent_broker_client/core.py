"""What the blocking and the asyncio client share besides their transport: the key they
act with, the wallet that pays a 402, and turning a response into an answer."""

from __future__ import annotations

from typing import Any

import httpx

from agent_broker_client import calls
from agent_broker_client.calls import Call
from agent_broker_client.operations import Operations
from agent_broker_client.payment import (
    PAYMENT_REQUIRED,
    PAYMENT_RESPONSE,
    PAYMENT_SIGNATURE,
    paid_timeout_seconds,
    payment_header,
    receipt_of,
    sign_in_signature,
    wallet_address,
)


def response_body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return {"detail": response.text}


class ClientCore(Operations):
    _http: httpx.Client | httpx.AsyncClient

    def __init__(
        self, api_key: str | None, wallet: Any, backoff_seconds: float, owns_http: bool
    ) -> None:
        """`wallet` (an eth-account key or LocalAccount): with no API key, a payable call's
        402 is paid with it (x402) and the account it opens keeps its key here."""
        self.api_key = api_key
        self._wallet = wallet
        self._backoff = backoff_seconds
        self._owns_http = owns_http
        # The last payment the wallet made: {receipt, new_account} (new_account only on a
        # wallet's first payment, with the key it is shown once).
        self.last_payment: dict[str, Any] | None = None

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

    def _timeout(self, headers: dict[str, str]) -> Any:
        """The client's timeouts, but a paid call waits for its answer longer than the
        service may take to settle the payment (payment.paid_timeout_seconds)."""
        if PAYMENT_SIGNATURE not in headers:
            return httpx.USE_CLIENT_DEFAULT
        configured = self._http.timeout
        read = None if configured.read is None else max(configured.read, paid_timeout_seconds())
        return httpx.Timeout(
            connect=configured.connect, read=read, write=configured.write, pool=configured.pool
        )

    def _wallet_challenge(self) -> Call:
        if self._wallet is None:
            raise ValueError("recovering a key needs the wallet: Client(..., wallet=KEY)")
        return calls.wallet_challenge(wallet_address(self._wallet))

    def _wallet_purchase(self) -> Call:
        if self._wallet is None:
            raise ValueError("buying with a wallet needs it: Client(..., wallet=KEY)")
        return calls.wallet_purchase()

    def _wallet_recovery(self, message: str, domain: str | None) -> Call:
        """The recovery of the account's key with the challenge `message` signed, once seen
        to be for `domain` (by default the client's base URL's host and port)."""
        expected = domain or self._http.base_url.netloc.decode()
        return calls.wallet_recover(message, sign_in_signature(self._wallet, message, expected))

    def _answer(self, call: Call, response: httpx.Response) -> Any:
        body = response_body(response)
        opened = body.get("new_account") if isinstance(body, dict) else None
        if isinstance(opened, dict) and opened.get("api_key"):
            self.api_key = opened["api_key"]  # a wallet's first payment opened the account
        receipt = response.headers.get(PAYMENT_RESPONSE)
        if receipt or isinstance(opened, dict):
            self.last_payment = {"receipt": receipt_of(receipt), "new_account": opened}
        result = call.answer(response.status_code, body)
        if call.keeps_key and getattr(result, "api_key", None):
            self.api_key = result.api_key
        return result
