"""The feed's opaque cursor: the (created_at, id) of the last entry served."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime

from agent_broker.problems import InvalidInput


def encode(created_at: datetime, listing_id: str) -> str:
    raw = json.dumps({"t": created_at.isoformat(), "i": listing_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names, or 400 invalid_input. The cursor is client input, so
    both values are checked to be ones the database can bind: a UTC time within datetime's
    range and a canonical listing id (never NUL, a lone surrogate or an oversized string)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        created_at = datetime.fromisoformat(data["t"])
        listing_id = data["i"]
        if created_at.tzinfo is None or not isinstance(listing_id, str):
            raise ValueError
        # Raises OverflowError when the offset pushes the instant outside years 1-9999.
        created_at = created_at.astimezone(UTC)
        if str(uuid.UUID(listing_id)) != listing_id:
            raise ValueError
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
        raise InvalidInput(
            "cursor is not a cursor this feed issued; start again without it."
        ) from None
    return created_at, listing_id
