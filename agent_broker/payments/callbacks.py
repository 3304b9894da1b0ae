"""The processors' callbacks (docs/interface.md §17.2): verify the delivery, find the invoice,
credit a confirmed payment once. Every refusal credits nothing and leaves one log line naming the
processor and why, never the body, the signature or a secret.

processor_a signs the raw body with HMAC-SHA256 under BROKER_PROCESSOR_A_WEBHOOK_SECRET
(hex in X-Webhook-Signature). Only status `paid` credits, the invoice's whole amount;
the event is the charge (a charge is paid once), so a redelivery answers 409
invoice_already_consumed. processor_b is believed only from its published addresses
(the client address through trusted proxies only); only `pending=0` credits, the whole
packs of what arrived (`value_coin`, a USD stablecoin amount), deduplicated by (deposit
address, payment uuid); every answer it takes as received is 200 `*ok*`, or it retries."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Mapping
from datetime import datetime
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any
from urllib.parse import parse_qsl

import structlog
from sqlalchemy.orm import Session

from agent_broker import json_input
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.payments.errors import InvoiceAlreadyConsumed, InvoiceConflict
from agent_broker.payments.packs import GATEWAY_TICKERS
from agent_broker.payments.service import invoice_by_processor_id, receive, whole_packs_micro
from agent_broker.problems import Forbidden, InvalidInput, NotFound, Unauthorized

log = structlog.get_logger("agent_broker.payments")
RECEIVED = "*ok*"


def _refuse(processor: str, problem: Exception, **context: Any) -> Exception:
    log.warning("processor_callback_refused", processor=processor, why=str(problem), **context)
    return problem


def parse_fields(processor: str, body: bytes, content_type: str) -> dict[str, str]:
    """A form-encoded or JSON object body as text fields (one value each)."""
    try:
        if "json" in content_type or body.lstrip().startswith(b"{"):
            document = json_input.loads(body)
            if not isinstance(document, dict):
                raise ValueError
            return {str(k): "" if v is None else str(v) for k, v in document.items()}
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False))
    except (ValueError, UnicodeDecodeError):
        raise _refuse(
            processor, InvalidInput("The callback body is neither a form nor a JSON object.")
        ) from None


# --- processor_a ---------------------------------------------------------------------------


def signature_holds(secret: str, body: bytes, presented: str | None) -> bool:
    if not secret or not presented:
        return False
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), presented.strip().lower().encode())


async def processor_a(
    db: Database,
    settings: Settings,
    body: bytes,
    *,
    content_type: str,
    signature: str | None,
    now: datetime,
) -> dict[str, Any]:
    if not signature_holds(settings.processor_a_webhook_secret, body, signature):
        raise _refuse("processor_a", Unauthorized("The callback signature does not verify."))
    fields = parse_fields("processor_a", body, content_type)
    charge_id, status = fields.get("id", ""), fields.get("status", "")
    if not charge_id or not status:
        raise _refuse("processor_a", InvalidInput("The callback names no charge id or status."))
    async with transaction(db, write=True) as session:
        return await run(session, _apply_a, session, charge_id, status, fields.get("order_id"), now)


def _apply_a(
    session: Session, charge_id: str, status: str, order_id: str | None, now: datetime
) -> dict[str, Any]:
    invoice = invoice_by_processor_id(session, "processor_a", charge_id)
    if invoice is None:
        raise _refuse("processor_a", NotFound("No invoice has this charge id."), charge=charge_id)
    if order_id and order_id != invoice.id:
        raise _refuse(
            "processor_a",
            InvoiceConflict("The callback's order_id is not the invoice of this charge."),
            invoice=invoice.id,
        )
    if status != "paid":
        return {"received": True, "credited_micro": 0}
    receipt = receive(
        session,
        invoice,
        processor="processor_a",
        event_key=f"{charge_id}:paid",
        credited_micro=invoice.amount_micro,
        now=now,
    )
    if receipt.duplicate:
        raise _refuse(
            "processor_a",
            InvoiceAlreadyConsumed("This charge was already credited; nothing more was credited."),
            invoice=invoice.id,
        )
    return {"received": True, "credited_micro": receipt.credited_micro}


# --- processor_b ---------------------------------------------------------------------------


def from_sources(settings: Settings, address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.processor_b_source_networks)


async def processor_b(
    db: Database,
    settings: Settings,
    body: bytes,
    *,
    content_type: str,
    query: Mapping[str, str],
    source: str,
    now: datetime,
) -> str:
    if not from_sources(settings, source):
        raise _refuse(
            "processor_b",
            Forbidden("Callbacks are accepted only from processor_b's published addresses."),
            source=source,
        )
    fields = {**query, **(parse_fields("processor_b", body, content_type) if body.strip() else {})}
    address, payment = fields.get("address_in", ""), fields.get("uuid", "")
    if not 0 < len(address) <= 200 or not 0 < len(payment) <= 99:
        raise _refuse(
            "processor_b", InvalidInput("The callback needs an address_in and a payment uuid.")
        )
    if fields.get("pending") not in ("0", "1"):
        raise _refuse("processor_b", InvalidInput("The callback's pending must be 0 or 1."))
    if fields["pending"] != "0":
        return RECEIVED  # seen in the mempool: credited once confirmed
    paid_micro = _micro(fields.get("value_coin", ""))
    async with transaction(db, write=True) as session:
        await run(session, _apply_b, session, fields, address, payment, paid_micro, now)
    return RECEIVED


def _apply_b(
    session: Session,
    fields: Mapping[str, str],
    address: str,
    payment: str,
    paid_micro: int,
    now: datetime,
) -> None:
    invoice = invoice_by_processor_id(session, "processor_b", address)
    if invoice is None:
        raise _refuse("processor_b", NotFound("No invoice has this deposit address."))
    named = fields.get("invoice")
    coin = fields.get("coin", "").replace("_", "/").lower()
    if (named and named != invoice.id) or (coin and coin != GATEWAY_TICKERS.get(invoice.chain)):
        raise _refuse(
            "processor_b",
            InvoiceConflict("The callback's invoice or coin is not this deposit address's."),
            invoice=invoice.id,
        )
    credited = whole_packs_micro(paid_micro)
    receipt = receive(
        session,
        invoice,
        processor="processor_b",
        event_key=f"{address}:{payment}",
        credited_micro=credited,
        now=now,
    )
    if not receipt.duplicate and credited == 0:
        log.warning("processor_payment_below_one_pack", processor="processor_b", invoice=invoice.id)


def _micro(value_coin: str) -> int:
    """µUSD of a stablecoin amount, truncated (no floats)."""
    try:
        amount = Decimal(value_coin)
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or amount < 0 or amount > 10**9:
        raise _refuse("processor_b", InvalidInput("value_coin is not an amount."))
    return int((amount * 1_000_000).to_integral_value(rounding=ROUND_FLOOR))
