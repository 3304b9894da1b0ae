from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class EventOut(BaseModel):
    id: str = Field(
        description="The event's id; the webhook of the same event carries it as webhook-id"
    )
    type: str = Field(description="thread.opened, thread.offer, deal.sealed, ...")
    timestamp: str
    data: dict[str, Any]


class EventPage(BaseModel):
    events: list[EventOut]
    next: str | None = Field(
        description="Pass as `after` to read on (the cursor given, when nothing was new)"
    )
