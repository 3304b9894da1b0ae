from __future__ import annotations

from pydantic import BaseModel, Field, StrictBool, StrictInt


class Contact(BaseModel):
    contact_name: str | None = None
    contact_email: str | None = None
    contact_url: str | None = None


class Interface(BaseModel):
    url: str
    protocolBinding: str
    protocolVersion: str


class CredentialPresentation(BaseModel):
    header: str
    scheme: str
    type: str
    securityScheme: str


class DealReveal(BaseModel):
    counterparty_endpoint: str
    counterparty_contact: Contact
    counterparty_interface: Interface | None = None
    counterparty_agent_card_url: str | None = None
    credential: str
    credential_kid: str
    credential_presentation: CredentialPresentation | None = None


class DealPackage(BaseModel):
    id: str
    status: str
    route: str
    credential: str
    credential_kid: str
    amount_micro: int
    reveal_at: str
    purge_at: str
    created_at: str
    reveal: DealReveal | None = None


class RatingRequest(BaseModel):
    score: StrictInt = Field(ge=1, le=5)
    delivered: StrictBool | None = Field(
        default=None, description="true affirms delivery, false flags non-delivery"
    )
