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


class DealPackage(BaseModel):
    id: Uuid
    status: Literal["active", "revealed"]
    route: str = Field(description="The counterparty's opaque per-deal route hash")
    credential: str = Field(description="Deal-scoped PASETO v4.public token")
    credential_kid: str
    amount_micro: int
    reveal_at: Timestamp
    purge_at: Timestamp
    created_at: Timestamp
    reveal: DealReveal | None = omitted_when_unset(
        description="Present once the deal is sealed and reveal_at has passed"
    )


class RatingRequest(BaseModel):
    score: StrictInt = Field(ge=1, le=5)
    delivered: StrictBool | None = Field(
        default=None, description="true affirms delivery, false flags non-delivery"
    )
