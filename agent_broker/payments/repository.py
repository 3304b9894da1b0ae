"""The payments feature's statements: invoices and the processors' event inbox (prepared,
agent_broker.db.prepared). x402's are in payments/x402/repository.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, inserting, inserting_unless_taken
from agent_broker.payments.models import Invoice, ProcessorEvent

_invoices = Invoice.__table__
_events = ProcessorEvent.__table__
_INSERT_INVOICE = inserting(_invoices)
_BY_PROCESSOR_ID = Prepared(
    select(_invoices).where(
        _invoices.c.processor == bindparam("processor"),
        _invoices.c.processor_id == bindparam("processor_id"),
    )
)
_RECEIVE = inserting_unless_taken(_events, returning=_events.c.id)
_PAID = Prepared(
    update(_invoices)
    .where(_invoices.c.id == bindparam("id"), _invoices.c.status == "open")
    .values(status="paid", paid_at=bindparam("now"))
)
_PAYABLE = Prepared(
    select(
        _invoices.c.processor,
        _invoices.c.chain,
        _invoices.c.amount_micro,
        _invoices.c.pack_count,
        _invoices.c.status,
    )
    .where(_invoices.c.processor_id == bindparam("address"))
    .where(_invoices.c.processor != "processor_a")  # its payer pays on its own page
)


def insert_invoice(session: Session, **columns: Any) -> None:
    """Write an invoice, given a value for every column."""
    _INSERT_INVOICE.execute(session, **columns)


def invoice_by_processor_id(session: Session, processor: str, processor_id: str) -> Any:
    return _BY_PROCESSOR_ID.one_or_none(session, processor=processor, processor_id=processor_id)


def payable_invoice(session: Session, address: str) -> Any:
    """The processor, chain, amount_micro, pack_count and status of the invoice paid at
    this address (a processor_b deposit address or a stub's id), or None."""
    return _PAYABLE.one_or_none(session, address=address)


def mark_paid(session: Session, invoice_id: str, *, now: datetime) -> None:
    """An open invoice becomes paid."""
    _PAID.execute(session, id=invoice_id, now=now)


def record_event(session: Session, **columns: Any) -> bool:
    """Write a processor event into the inbox, given a value for every column; False when
    the inbox holds it already (a redelivery)."""
    return _RECEIVE.one_or_none(session, **columns) is not None
