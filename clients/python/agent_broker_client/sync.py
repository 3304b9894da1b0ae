"""The blocking client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx

from agent_broker_client.calls import ATTEMPTS, RETRY_STATUSES, Call
from agent_broker_client.core import ClientCore
from agent_broker_client.events import (
    LONGEST_WAIT,
    STREAM_PATH,
    messages,
    refused,
    stream_headers,
)
from agent_broker_client.models import EventOut
from agent_broker_client.payment import PAYMENT_SIGNATURE


class Client(ClientCore):
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
        backoff_seconds: float = 0.5,
        wallet: Any = None,
    ) -> None:
        super().__init__(api_key, wallet, backoff_seconds, owns_http=http is None)
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_client()

    def close_client(self) -> None:
        if self._owns_http:
            self._http.close()

    def _run(self, call: Call) -> Any:
        headers = call.headers(self.api_key)  # once: a retry resends the same key
        # Only a read or a keyed write is sent again (calls.Call.retryable).
        attempts = ATTEMPTS if call.retryable else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._send(call, headers)
                if self._payable(response, headers):
                    # Paid at once, within this attempt; a retry resends the same payment.
                    headers = {**headers, PAYMENT_SIGNATURE: self._pay(response)}
                    response = self._send(call, headers)
            except httpx.TransportError:
                if attempt == attempts:
                    raise
            else:
                if response.status_code not in RETRY_STATUSES or attempt == attempts:
                    return self._answer(call, response)
            time.sleep(self._backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def recover_wallet_key(self, *, domain: str | None = None) -> Any:
        """A new key for the account the client's wallet pays for (x402), by signing the
        service's Sign-In with Ethereum challenge; the client keeps it, and the old key is
        refused from then on. `domain`: the service's public host and port as its messages
        name them, if not the base URL's."""
        challenge = self._run(self._wallet_challenge())
        return self._run(self._wallet_recovery(challenge.message, domain))

    def events(
        self, after: str | None = None, *, follow: bool = True, wait: float = LONGEST_WAIT
    ) -> Iterator[EventOut]:
        """Your events after `after` (an event id; from the oldest kept when None), oldest
        first. With `follow`, it then waits for each new one (long-poll, `wait` seconds a
        request) and never ends: stop iterating to stop. Without, it ends once read up."""
        while True:
            page = self.events_page(after, wait=wait if follow else 0)
            yield from page.events
            after = page.next
            if not follow and not page.events:
                return

    def stream_events(self, after: str | None = None) -> Iterator[EventOut]:
        """Your events after `after` over Server-Sent Events, as they are written; when
        the service ends the stream it is opened again after the last event seen."""
        last = after
        while True:
            with self._http.stream(
                "GET", STREAM_PATH, headers=stream_headers(self.api_key, last)
            ) as response:
                if response.status_code != 200:
                    raise refused(response.status_code, response.read())
                for event in messages(response.iter_bytes()):
                    last = event.id
                    yield event

    def _send(self, call: Call, headers: dict[str, str]) -> httpx.Response:
        return self._http.request(
            call.method,
            call.path,
            params=call.params or None,
            json=call.json,
            headers=headers,
            timeout=self._timeout(headers),
        )
