"""Invoices and the credits their processors' callbacks confirm.

An invoice is created in three steps: the request is checked (packs.order_for), the
processor is asked for a charge or a deposit address with no transaction open, and the
invoice is stored with what it expects to collect. A confirmed payment is credited
through the ledger as real money (the account becomes funded) in the same transaction
as its row in the inbox, `processor_events`, unique on the processor's identity of the
event: a redelivery, however many arrive at once, finds that row and credits nothing."""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.http.outbound import OutboundClient
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.ledger import books
from agent_broker.ledger.service import credit
from agent_broker.payments import processors, repository
from agent_broker.payments.packs import Order, order_for
from agent_broker.pricing import PACK_CREDITS, PACK_MICRO

BOOKS = {"processor_a": books.PROCESSOR_A, "processor_b": books.PROCESSOR_B}


async def create_invoice(
    db: Database,
    settings: Settings,
    outbound: OutboundClient,
    limiter: RateLimiter,
    account_id: str,
    *,
    pack_count: int,
    processor: str | None,
    chain: str | None,
    now: datetime,
) -> dict[str, Any]:
    order = order_for(settings, pack_count, processor, chain)
    # A valid order costs a call to the processor: each account has a budget of them.
    limiter.hit("invoice", settings.invoice_rate_limit, account_id)
    invoice_id = str(uuid.uuid4())
    if order.processor == "processor_a":
        placed = await processors.create_charge(outbound, settings, invoice_id, order)
    elif order.processor == "processor_b":
        placed = await processors.create_address(outbound, settings, invoice_id, order)
    else:
        stub_id = "stub_" + secrets.token_hex(12)
        placed = processors.Placement(stub_id, processors.pay_page_url(settings, stub_id))
    async with transaction(db, write=True) as session:
        await run(session, _store, session, invoice_id, account_id, order, placed, now)
    return {
        "payment_url": placed.payment_url,
        "amount_micro": order.amount_micro,
        "credits_to_add": order.credits,
        "processor_id": placed.processor_id,
    }


def _store(
    session: Session,
    invoice_id: str,
    account_id: str,
    order: Order,
    placed: processors.Placement,
    now: datetime,
) -> None:
    repository.insert_invoice(
        session,
        id=invoice_id,
        account_id=account_id,
        processor=order.processor,
        chain=order.chain,
        pack_count=order.pack_count,
        amount_micro=order.amount_micro,
        processor_id=placed.processor_id,
        payment_url=placed.payment_url,
        status="open",
        created_at=now,
        paid_at=None,
    )


def invoice_by_processor_id(session: Session, processor: str, processor_id: str) -> Any:
    return repository.invoice_by_processor_id(session, processor, processor_id)


@dataclass(frozen=True)
class Receipt:
    duplicate: bool  # the processor already delivered this event: nothing was done
    credited_micro: int


def whole_packs_micro(amount_micro: int) -> int:
    """What a payment buys: its whole packs (a remainder below one pack is not credited)."""
    return amount_micro // PACK_MICRO * PACK_MICRO


def receive(
    session: Session,
    invoice: Any,
    *,
    processor: str,
    event_key: str,
    credited_micro: int,
    now: datetime,
) -> Receipt:
    """Record the event and credit `credited_micro` (real money) once, whatever number of
    deliveries of it arrive, concurrently or not."""
    received = repository.record_event(
        session,
        id=str(uuid.uuid4()),
        processor=processor,
        event_key=event_key,
        invoice_id=invoice.id,
        credited_micro=credited_micro,
        received_at=now,
    )
    if not received:
        return Receipt(duplicate=True, credited_micro=0)
    if credited_micro > 0:
        credit(
            session,
            invoice.account_id,
            credited_micro,
            source=BOOKS[processor],
            kind=f"{processor}_payment",
            memo=(
                f"invoice {invoice.id}: {credited_micro // PACK_MICRO} packs "
                f"({credited_micro // PACK_MICRO * PACK_CREDITS} credits)"
            ),
            now=now,
            real_money=True,
            reference=invoice.id,
        )
        repository.mark_paid(session, invoice.id, now=now)
    return Receipt(duplicate=False, credited_micro=credited_micro)
