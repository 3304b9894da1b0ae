from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agent_broker.http.responses import Timestamp, Uuid
from agent_broker.reputation.schemas import CounterpartyReputation

MAX_DIFF = 10_000


class DiffRequest(BaseModel):
    diff: str = Field(max_length=MAX_DIFF, description="Proposed terms; replaces the running diff")


class ThreadOut(BaseModel):
    id: Uuid
    listing_id: Uuid
    status: Literal["open", "rejected", "finalized", "closed"]
    turn: Literal["poster", "negotiator"] = Field(description="Whose move it is")
    diff: str
    amount_micro: int = Field(description="The flat deal fee held for this thread")
    created_at: Timestamp
    updated_at: Timestamp


class ThreadRead(ThreadOut):
    """A thread as read by a party: with the other party's reputation record."""

    counterparty: CounterpartyReputation
