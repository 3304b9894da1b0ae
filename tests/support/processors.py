"""Local fakes of the two processors' APIs, on 127.0.0.1: processor_a creates charges
(POST /v1/charges), processor_b creates deposit addresses (GET /{chain}/{coin}/create/).
Each records what it was asked, can be told to fail, and can deliver the callbacks a
real processor would send for a payment."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


@dataclass
class FakeProcessors:
    base_url: str = ""
    charges: dict[str, dict[str, Any]] = field(default_factory=dict)  # charge id -> request
    addresses: dict[str, dict[str, str]] = field(default_factory=dict)  # address -> query
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    fail_with: int | None = None  # answer every API call with this status

    def charge_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        charge_id = "ch_" + secrets.token_hex(8)
        self.charges[charge_id] = body
        return {
            "data": {
                "id": charge_id,
                "hosted_checkout_url": f"{self.base_url}/checkout/{charge_id}",
            }
        }

    def address_answer(self, query: dict[str, str]) -> dict[str, Any]:
        address = "0x" + secrets.token_hex(20)
        self.addresses[address] = query
        return {"status": "success", "address_in": address, "callback_url": query.get("callback")}


def _handler(fake: FakeProcessors) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, document: Any) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            fake.requests.append(("POST", self.path, dict(self.headers)))
            if fake.fail_with:
                return self._answer(fake.fail_with, {"message": "unavailable"})
            if self.path != "/v1/charges":
                return self._answer(404, {"message": "no such path"})
            return self._answer(201, fake.charge_answer(body))

        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            fake.requests.append(("GET", self.path, dict(self.headers)))
            if fake.fail_with:
                return self._answer(fake.fail_with, {"status": "error"})
            if not parts.path.endswith("/create/"):
                return self._answer(404, {"status": "error"})
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            query["ticker"] = parts.path.strip("/").removesuffix("/create")
            return self._answer(200, fake.address_answer(query))

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def fake_processors() -> Iterator[FakeProcessors]:
    fake = FakeProcessors()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    # A short poll: shutdown() waits up to one poll interval (0.5 s by default) per test.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def processor_a_callback(secret: str, charge_id: str, *, status: str = "paid", **extra: str):
    """The form body processor_a posts for a charge, and its signature header."""
    fields = {"id": charge_id, "status": status, "price": "1500", "fee": "0", **extra}
    body = urlencode(fields).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return body, {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Webhook-Signature": signature,
    }


def processor_b_callback(
    address: str,
    payment_uuid: str,
    value_coin: str,
    *,
    pending: int = 0,
    coin: str = "polygon_usdt",
) -> dict[str, str]:
    """The fields processor_b posts for a payment to a deposit address."""
    return {
        "uuid": payment_uuid,
        "address_in": address,
        "address_out": "0x" + "ab" * 20,
        "txid_in": "0x" + secrets.token_hex(32),
        "coin": coin,
        "value_coin": value_coin,
        "pending": str(pending),
    }
