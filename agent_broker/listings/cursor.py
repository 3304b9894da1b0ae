"""The feed's opaque cursor: the (created_at, id) of the last entry served."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from agent_broker.problems import InvalidInput


def encode(created_at: datetime, listing_id: str) -> str:
    raw = json.dumps({"t": created_at.isoformat(), "i": listing_id}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        created_at = datetime.fromisoformat(data["t"])
        listing_id = data["i"]
        if created_at.tzinfo is None or not isinstance(listing_id, str):
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise InvalidInput(
            "cursor is not a cursor this feed issued; start again without it."
        ) from None
    return created_at, listing_id
