from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, StrictBool, StrictInt

from agent_broker.http.responses import (
    Email,
    ProtocolBinding,
    Timestamp,
    Uri,
    Uuid,
    omitted_when_unset,
)


class Contact(BaseModel):
    """The counterparty operator's contact; a field not declared is omitted."""

    contact_name: str | None = omitted_when_unset()
    contact_email: Email | None = omitted_when_unset()
    contact_url: Uri | None = omitted_when_unset()


class Interface(BaseModel):
    url: Uri = Field(description="Equals counterparty_endpoint")
    protocolBinding: ProtocolBinding
    protocolVersion: Literal["1.0", "1"] = Field(
        description="1.0 for the two A2A bindings, 1 for the webhook binding"
    )


class CredentialPresentation(BaseModel):
    """Send the credential as `Authorization: Bearer <credential>`."""

    header: Literal["Authorization"]
    scheme: Literal["Bearer"]
    type: Literal["http"]
    securityScheme: Literal["bearer"]


class DealReveal(BaseModel):
    counterparty_endpoint: Uri = Field(
        description="The counterparty's deal-route base plus this deal's route hash"
    )
    counterparty_contact: Contact
    counterparty_interface: Interface | None = omitted_when_unset(
        description="Omitted when the counterparty declared no protocol binding"
    )
    counterparty_agent_card_url: Uri | None = omitted_when_unset(
        description="Omitted when the counterparty declared no agent card"
    )
    credential: str = Field(description="PASETO v4.public deal credential")
    credential_kid: str
    credential_presentation: CredentialPresentation | None = omitted_when_unset(
        description="Omitted when there is no credential"
    )


class EscrowDelivery(BaseModel):
    delivered_at: Timestamp
    note: str | None = omitted_when_unset()
    evidence_sha256: str | None = omitted_when_unset()


class EscrowRejection(BaseModel):
    rejected_at: Timestamp
    reason: str


class EscrowRuling(BaseModel):
    outcome: Literal["release", "refund", "split"]
    seller_share_bps: int
    reason: str
    ruled_at: Timestamp
    token: str = Field(
        description="PASETO v4.public, purpose svc.ruling.v1, signed by the service key"
    )


class EscrowSettlement(BaseModel):
    released_micro: int = Field(description="Paid to the seller, the escrow fee taken")
    refunded_micro: int = Field(description="Given back to the buyer")
    fee_micro: int
    settled_at: Timestamp
    settled_by: Literal["accepted", "ruled", "operator", "deadline"]


class Escrow(BaseModel):
    status: Literal["held", "delivered", "rejected", "released", "refunded", "split"]
    amount_micro: int = Field(description="The agreed price, held from the seal")
    fee_bps: int = Field(
        description="The escrow fee in basis points of the seller's share, taken from it"
    )
    deliver_by: Timestamp
    accept_by: Timestamp | None = omitted_when_unset(description="Set on delivery")
    evaluator: str = Field(description='The evaluator\'s handle, or "operator"')
    ruling: EscrowRuling | None = omitted_when_unset(description="Once the evaluator ruled")
    delivery: EscrowDelivery | None = omitted_when_unset()
    rejection: EscrowRejection | None = omitted_when_unset()
    settlement: EscrowSettlement | None = omitted_when_unset()


class DealPackage(BaseModel):
    id: Uuid
    status: Literal["active", "revealed"]
    route: str | None = omitted_when_unset(
        description="The counterparty's opaque per-deal route hash (omitted for the evaluator)"
    )
    credential: str | None = omitted_when_unset(
        description="Deal-scoped PASETO v4.public token (omitted for the evaluator)"
    )
    credential_kid: str | None = omitted_when_unset()
    amount_micro: int
    reveal_at: Timestamp
    purge_at: Timestamp
    created_at: Timestamp
    reveal: DealReveal | None = omitted_when_unset(
        description="Present once the deal is sealed and reveal_at has passed"
    )
    escrow: Escrow | None = omitted_when_unset(description="Escrow deals only")


class DeliveryRequest(BaseModel):
    note: str | None = Field(default=None, max_length=2000)
    evidence_sha256: str | None = Field(
        default=None, pattern="^[0-9a-f]{64}$", description="SHA-256 (hex) of the delivered work"
    )


class RejectionRequest(BaseModel):
    reason: str = Field(min_length=1, max_length=2000)


class RulingRequest(BaseModel):
    outcome: Literal["release", "refund", "split"]
    seller_share_bps: StrictInt | None = Field(
        default=None, ge=0, le=10_000, description="A split only: the seller's share"
    )
    reason: str = Field(min_length=1, max_length=2000)


class RatingRequest(BaseModel):
    score: StrictInt = Field(ge=1, le=5)
    delivered: StrictBool | None = Field(
        default=None, description="true affirms delivery, false flags non-delivery"
    )
