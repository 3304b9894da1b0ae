"""The two processors' APIs, called through the outbound client with no transaction open.
Any failure to get a usable answer is 502 processor_unavailable, and nothing is stored.

processor_a is a Lightning hosted-charge API in the style of OpenNode's v1 charges:
POST {api}/v1/charges with the amount in USD, answered by the charge's id and its hosted
checkout URL; its callbacks come to /webhooks/processor-a. processor_b is an
address-forwarding gateway in the style of BlockBee/CryptAPI: GET
{api}/{ticker}/create/?callback=...&address=... answers a deposit address (`address_in`)
that forwards to the operator's own address; `post=1` asks for POST callbacks to
/webhooks/processor-b, `pending=1` for the unconfirmed one too (ignored when it comes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import structlog

from agent_broker import json_input
from agent_broker.config import Settings
from agent_broker.http.outbound import OutboundClient, OutboundRefused, OutboundResponse
from agent_broker.payments.errors import ProcessorUnavailable
from agent_broker.payments.packs import GATEWAY_TICKERS, Order
from agent_broker.pricing import usd

log = structlog.get_logger("agent_broker.payments")
MAX_ANSWER_BYTES = 64 * 1024


@dataclass(frozen=True)
class Placement:
    """Where the processor will collect the money: its own id and the payer's page."""

    processor_id: str
    payment_url: str


def callback_url(settings: Settings, processor: str, **params: str) -> str:
    path = "/webhooks/processor-a" if processor == "processor_a" else "/webhooks/processor-b"
    query = f"?{urlencode(params)}" if params else ""
    return f"{settings.public_base_url.rstrip('/')}{path}{query}"


def pay_page_url(settings: Settings, address: str) -> str:
    return f"{settings.public_base_url.rstrip('/')}/dashboard/pay/{address}"


async def create_charge(
    outbound: OutboundClient, settings: Settings, invoice_id: str, order: Order
) -> Placement:
    body = {
        "amount": usd(order.amount_micro),
        "currency": "USD",
        "description": f"{order.credits} agent-broker credits",
        "order_id": invoice_id,
        "callback_url": callback_url(settings, "processor_a"),
        "auto_settle": False,
    }
    headers = {"Authorization": settings.processor_a_api_key}
    url = f"{settings.processor_a_api_url.rstrip('/')}/v1/charges"
    answer = _json(await _call(outbound, "processor_a", "POST", url, body, headers))
    data = answer.get("data") if isinstance(answer, dict) else None
    charge_id = data.get("id") if isinstance(data, dict) else None
    checkout = data.get("hosted_checkout_url") if isinstance(data, dict) else None
    if not _text(charge_id) or not _text(checkout, 2048):
        raise _unavailable("processor_a", "its answer names no charge id and checkout URL")
    return Placement(processor_id=charge_id, payment_url=checkout)


async def create_address(
    outbound: OutboundClient, settings: Settings, invoice_id: str, order: Order
) -> Placement:
    assert order.chain is not None
    query = urlencode(
        {
            "callback": callback_url(settings, "processor_b", invoice=invoice_id),
            "address": settings.processor_b_address(order.chain),
            "post": "1",
            "json": "1",
            "pending": "1",
        }
    )
    base = settings.processor_b_api_url.rstrip("/")
    url = f"{base}/{GATEWAY_TICKERS[order.chain]}/create/?{query}"
    answer = _json(await _call(outbound, "processor_b", "GET", url, None, {}))
    address = answer.get("address_in") if isinstance(answer, dict) else None
    # Addresses of every chain offered are alphanumeric; anything else is not one (and
    # would not make a usable pay page URL).
    if (
        not isinstance(answer, dict)
        or answer.get("status") != "success"
        or not (_text(address) and address.isascii() and address.isalnum())
    ):
        raise _unavailable("processor_b", "its answer names no deposit address")
    return Placement(processor_id=address, payment_url=pay_page_url(settings, address))


async def _call(
    outbound: OutboundClient,
    processor: str,
    method: str,
    url: str,
    body: Any,
    headers: dict[str, str],
) -> OutboundResponse:
    try:
        response = await outbound.request(
            method, url, json=body, headers=headers, max_bytes=MAX_ANSWER_BYTES
        )
    except OutboundRefused as exc:
        raise _unavailable(processor, f"it could not be reached ({exc.kind})") from None
    if not 200 <= response.status_code < 300:
        raise _unavailable(processor, f"it answered {response.status_code}")
    return response


def _json(response: OutboundResponse) -> Any:
    try:
        return json_input.loads(response.body)
    except ValueError:
        return None


def _text(value: Any, limit: int = 200) -> bool:
    return isinstance(value, str) and 0 < len(value) <= limit and value.isprintable()


def _unavailable(processor: str, why: str) -> ProcessorUnavailable:
    log.warning("processor_unavailable", processor=processor, why=why)
    return ProcessorUnavailable(
        f"{processor} did not create the invoice: {why}. Nothing was charged."
    )
