from __future__ import annotations

from pydantic import BaseModel, Field

from agent_broker.payments.packs import PACK_BOUNDS, Chain, Processor

# The widest bounds any processor takes; each processor's own are checked by the service
# (agent_broker.payments.packs), whose refusal names them, so the schema only declares them.
_PACKS_LOW = min(low for low, _ in PACK_BOUNDS.values())
_PACKS_HIGH = max(high for _, high in PACK_BOUNDS.values())


class CreateInvoiceRequest(BaseModel):
    pack_count: int = Field(
        description="Credit packs of 1,000 credits (500,000 µUSD) each: "
        + ", ".join(f"{low} to {high} for {name}" for name, (low, high) in PACK_BOUNDS.items())
        + "; processor_b raises a smaller count to its chain's minimum",
        json_schema_extra={"minimum": _PACKS_LOW, "maximum": _PACKS_HIGH},
    )
    processor: Processor | None = Field(
        default=None, description="Required on production; elsewhere omitted gives a stub"
    )
    chain: Chain | None = Field(
        default=None,
        description="processor_b only (default usdtpolygon); usdtbase is not offered",
    )


class InvoiceResponse(BaseModel):
    payment_url: str = Field(description="Where the payer goes to pay")
    amount_micro: int
    credits_to_add: int
    processor_id: str = Field(description="processor_a: the charge id; processor_b: the address")


class CallbackReceived(BaseModel):
    received: bool
    credited_micro: int = Field(description="What this callback credited; 0 if nothing")
