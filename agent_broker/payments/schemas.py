from __future__ import annotations

from pydantic import BaseModel, Field

from agent_broker.payments.packs import Chain, Processor


class CreateInvoiceRequest(BaseModel):
    pack_count: int = Field(description="Credit packs of 1,000 credits (500,000 µUSD) each")
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
