from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, StrictInt

from agent_broker.http.responses import Timestamp, Uuid
from agent_broker.listings.schemas import MAX_PRICE_MICRO
from agent_broker.reputation.schemas import CounterpartyReputation

MAX_DIFF = 10_000


class DiffRequest(BaseModel):
    diff: str = Field(max_length=MAX_DIFF, description="Proposed terms; replaces the running diff")
    price_micro: StrictInt | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE_MICRO,
        description="The price this offer names; the thread's price from now on. On an escrow"
        " sell listing the buyer's price hold follows it",
    )


class FinalizeRequest(BaseModel):
    agreed_price_micro: StrictInt | None = Field(
        default=None,
        description="Escrow listings: the price the poster means to seal at; anything but the"
        " thread's price is refused (402 held_funds_mismatch). Ignored on direct listings",
    )


class ThreadOut(BaseModel):
    id: Uuid
    listing_id: Uuid
    status: Literal["open", "rejected", "finalized", "closed"]
    turn: Literal["poster", "negotiator"] = Field(description="Whose move it is")
    diff: str
    amount_micro: int = Field(description="The flat deal fee held for this thread")
    price_micro: int = Field(
        description="The last price an offer named; the listing's price until one does"
    )
    created_at: Timestamp
    updated_at: Timestamp


class ThreadRead(ThreadOut):
    """A thread as read by a party: with the other party's reputation record."""

    counterparty: CounterpartyReputation
