"""The escrows' statements, prepared once (agent_broker.db.prepared), behind the operations
the escrow rules (agent_broker.escrow.service) ask for. Rows come back as named tuples
with the escrow's columns; a move is one conditional UPDATE that returns the row as moved,
so no step reads the escrow again after writing it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.orm import Session

from agent_broker.db.prepared import Prepared, inserting
from agent_broker.escrow.models import OPEN, DealEscrow

_escrows = DealEscrow.__table__
_c = _escrows.c
# Each open status is its own fixed bind: a prepared statement takes no expanding IN.
_IS_OPEN = or_(*(_c.status == status for status in OPEN))

_ESCROW = Prepared(select(_escrows).where(_c.deal_id == bindparam("deal_id")))
_INSERT = inserting(_escrows, returning=True)
_EMPTY = {column.key: None for column in _escrows.c}
_HELD_AS_BUYER = Prepared(
    select(func.coalesce(func.sum(_c.amount_micro), 0)).where(
        _c.buyer_id == bindparam("buyer_id"), _IS_OPEN
    )
)
_DUE = Prepared(
    select(_escrows)
    .where(
        ((_c.status == "held") & (_c.deliver_by < bindparam("now")))
        | ((_c.status == "delivered") & (_c.accept_by < bindparam("now")))
    )
    .order_by(_c.deliver_by)
    .limit(bindparam("limit"))
)


def _moving(expected: str, *columns: str) -> Prepared:
    """UPDATE of the escrow out of status `expected`, setting `columns` (bound by name) and
    the new status; the row as moved, or none when another step moved it first."""
    return Prepared(
        update(_escrows)
        .where(_c.deal_id == bindparam("deal_id"), _c.status == expected)
        .values({"status": bindparam("to_status"), **{c: bindparam(c) for c in columns}})
        .returning(*_c)
    )


_SETTLEMENT = ("released_micro", "refunded_micro", "fee_micro", "settled_at", "settled_by")
_RULING = (
    "ruling_outcome",
    "ruling_seller_share_bps",
    "ruling_reason",
    "ruling_token",
    "ruled_at",
)
_DELIVER = _moving("held", "delivered_at", "accept_by", "delivery_note", "evidence_sha256")
_REJECT = _moving("delivered", "rejected_at", "rejection_reason")
_SETTLE = {status: _moving(status, *_SETTLEMENT) for status in OPEN}
_SETTLE_RULED = _moving("rejected", *_SETTLEMENT, *_RULING)


def find(session: Session, deal_id: str) -> Any:
    """The deal's escrow row, or None."""
    return _ESCROW.one_or_none(session, deal_id=deal_id)


def insert(session: Session, **columns: Any) -> Any:
    """Insert an escrow (the columns not given are empty until a step fills them); its
    row (the insert goes with the session's next round trip where that saves one)."""
    return _INSERT.queue_row(session, **{**_EMPTY, **columns})


def held_as_buyer(session: Session, account_id: str) -> int:
    return int(_HELD_AS_BUYER.scalar(session, buyer_id=account_id) or 0)


def due(session: Session, *, now: datetime, limit: int) -> list[Any]:
    """Open escrows past their deadline, the earliest first."""
    return _DUE.all(session, now=now, limit=limit)


def deliver(session: Session, deal_id: str, **values: Any) -> Any:
    return _DELIVER.one_or_none(session, deal_id=deal_id, to_status="delivered", **values)


def reject(session: Session, deal_id: str, **values: Any) -> Any:
    return _REJECT.one_or_none(session, deal_id=deal_id, to_status="rejected", **values)


def settle(session: Session, deal_id: str, *, expected: str, status: str, **values: Any) -> Any:
    """Settle the escrow from `expected` to `status`; with ruling_* values, as ruled."""
    if "ruled_at" in values:
        assert expected == "rejected", "only a rejected escrow is ruled on"
        moving = _SETTLE_RULED
    else:
        moving = _SETTLE[expected]
    return moving.one_or_none(session, deal_id=deal_id, to_status=status, **values)
