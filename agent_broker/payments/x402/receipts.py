"""The answer to a paid request: the facilitator's receipt in X-PAYMENT-RESPONSE (v1) and
PAYMENT-RESPONSE (v2), and, when the payment opened an account, that account's key in
the JSON body, this once. It is added here, on the way out, so an answer kept for an
Idempotency-Key replay never holds the key, and a refused call (a problem document)
still hands it over: the credits were bought either way."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from x402.http.utils import encode_payment_response_header

from agent_broker import json_input
from agent_broker.payments.x402.gate import STATE_KEY
from agent_broker.payments.x402.service import Settlement

RECEIPT_HEADERS = (b"x-payment-response", b"payment-response")
KEY_NOTICE = (
    "This API key is shown once: keep it and send it as x-api-key from now on. "
    "Payments from the same wallet keep crediting this account."
)


def new_account_member(settlement: Settlement, handle: str) -> dict[str, Any]:
    return {
        "account_id": settlement.account_id,
        "handle": handle,
        "api_key": settlement.new_api_key,
        "notice": KEY_NOTICE,
    }


def _with_account(body: bytes, member: dict[str, Any]) -> bytes:
    try:
        document = json_input.loads(body) if body else None
    except ValueError:
        document = body.decode("utf-8", "replace")
    if isinstance(document, dict):
        document["new_account"] = member
    else:
        document = {"new_account": member, "answer": document}
    return json.dumps(document, separators=(",", ":")).encode()


class ReceiptMiddleware:
    def __init__(self, app: ASGIApp, handle_for: Any) -> None:
        self.app = app
        self.handle_for = handle_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        chunks: list[bytes] = []

        async def send_with_receipt(message: Message) -> None:
            nonlocal held
            settlement: Settlement | None = scope.get("state", {}).get(STATE_KEY)
            if settlement is None:
                await send(message)
                return
            if message["type"] == "http.response.start":
                receipt = encode_payment_response_header(settlement.receipt).encode()
                headers = list(message.get("headers", ()))
                headers += [(name, receipt) for name in RECEIPT_HEADERS]
                message = {**message, "headers": headers}
                if settlement.new_api_key is None:
                    await send(message)
                else:
                    held = message
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            member = new_account_member(settlement, self.handle_for(settlement.account_id))
            body = _with_account(b"".join(chunks), member)
            headers = [(k, v) for k, v in held["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, send_with_receipt)
