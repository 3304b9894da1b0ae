"""The feed's opaque cursor: where the last entry served stands in the page's order, its
(created_at, id) and, for the price orders, its price and which order it belongs to."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from agent_broker import json_input
from agent_broker.problems import InvalidInput

NEWEST = "newest"
MAX_PRICE = 2**63 - 1


@dataclass(frozen=True)
class Position:
    created_at: datetime
    listing_id: str
    sort: str = NEWEST
    price_micro: int | None = None  # set for the price orders only


def encode(created_at: datetime, listing_id: str) -> str:
    return encode_position(Position(created_at, listing_id))


def encode_position(position: Position) -> str:
    data: dict = {"t": position.created_at.isoformat(), "i": position.listing_id}
    if position.sort != NEWEST:
        data |= {"s": position.sort, "p": position.price_micro}
    raw = json.dumps(data, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_position(cursor: str, sort: str) -> Position:
    """The position a cursor of the `sort` order names, or 400 invalid_input (also for a
    cursor of another order: its position means nothing in this one)."""
    created_at, listing_id, data = _decoded(cursor)
    issued_for = data.get("s", NEWEST)
    if issued_for != sort:
        raise InvalidInput(
            f"cursor belongs to sort={issued_for}, not sort={sort}; keep the sort while paging."
        )
    price = data.get("p")
    if sort != NEWEST and not (type(price) is int and 0 <= price <= MAX_PRICE):
        raise InvalidInput("cursor is not a cursor this feed issued; start again without it.")
    return Position(created_at, listing_id, sort, price)


def decode(cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a cursor names, or 400 invalid_input."""
    created_at, listing_id, _ = _decoded(cursor)
    return created_at, listing_id


def _decoded(cursor: str) -> tuple[datetime, str, dict]:
    """The cursor is client input, so both values are checked to be ones the database can
    bind: a UTC time within datetime's range and a canonical listing id (never NUL, a
    lone surrogate or an oversized string)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json_input.loads(base64.urlsafe_b64decode(padded.encode()))
        created_at = datetime.fromisoformat(data["t"])
        listing_id = data["i"]
        if (
            not isinstance(data, dict)
            or created_at.tzinfo is None
            or not isinstance(listing_id, str)
        ):
            raise ValueError
        # Raises OverflowError when the offset pushes the instant outside years 1-9999.
        created_at = created_at.astimezone(UTC)
        if str(uuid.UUID(listing_id)) != listing_id:
            raise ValueError
    except (ValueError, KeyError, TypeError, OverflowError):
        raise InvalidInput(
            "cursor is not a cursor this feed issued; start again without it."
        ) from None
    return created_at, listing_id, data
