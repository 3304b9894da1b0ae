from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, WithJsonSchema

from agent_broker.http.responses import (
    Email,
    Handle,
    ProtocolBinding,
    Timestamp,
    Uri,
    Uuid,
    omitted_when_unset,
)

AccountStatus = Literal["active", "inactive"]
MissingField = Literal["contact_name", "contact_email", "deal_route"]
BlockedAction = Literal["open_thread", "receive_thread"]


class RegisterAccountRequest(BaseModel):
    # Any JSON value is taken, so that every value other than true is 428 terms_required
    # (docs/interface.md §7.1), a string or a number included; the document still
    # declares what to send.
    accepted_terms: Annotated[
        Any,
        WithJsonSchema(
            {"anyOf": [{"type": "boolean"}, {"type": "null"}], "title": "Accepted Terms"}
        ),
    ] = Field(default=None, description="Required; must be true (otherwise 428 terms_required).")


class NextStep(BaseModel):
    action: Literal["set_contact", "set_route"]
    method: Literal["PUT"]
    path: Literal["/v1/account/contact", "/v1/account/route"]


class SetupRequired(BaseModel):
    missing: list[MissingField] = Field(description="Empty when the profile is complete")
    blocked_actions: list[BlockedAction] = Field(description="Empty when the profile is complete")
    next: list[NextStep] = Field(description="Contact first, then route; empty when complete")


class RegisteredAccount(BaseModel):
    """201: the account was created; the API key is shown this once."""

    account_id: Uuid
    api_key: str = Field(description="Shown once; only a keyed hash is stored")
    existing: Literal[False]
    account_setup_required: SetupRequired


class RegistrationReplay(BaseModel):
    """200: a replay of a registration with the same Idempotency-Key; never the key."""

    account_id: Uuid
    existing: Literal[True]


# The registration answer of docs/interface.md §7.1: the 201 that created the account, or its 200
# replay. As a route's response model it renders either; the document declares each
# shape under its own status (see http/responses.py).
RegisterAccountResponse = RegisteredAccount | RegistrationReplay


class ReputationFacetOut(BaseModel):
    rating_sum: int
    rating_count: int
    finalized_count: int
    non_delivery_count: int


class ReputationOut(BaseModel):
    buyer: ReputationFacetOut
    seller: ReputationFacetOut
    funded: bool
    domain_verified: bool


class AccountOut(BaseModel):
    account_id: Uuid
    handle: Handle
    balance_micro: int
    held_micro: int
    status: AccountStatus
    key_preview: str
    created_at: Timestamp
    reputation: ReputationOut


class ContactOut(BaseModel):
    contact_name: str
    contact_email: Email
    contact_url: Uri | None = omitted_when_unset(description="Omitted when not declared")


class AccountProfileOut(BaseModel):
    account_id: Uuid
    status: AccountStatus
    balance_credits: int
    key_preview: str
    contact: ContactOut | None = Field(description="null until a contact is set")
    deal_route: Uri | None = Field(description="null until a route is set")
    route_protocol_binding: ProtocolBinding | None = Field(
        description="Advisory; null when not declared"
    )
    agent_card_url: Uri | None = Field(description="Advisory; null when not declared")
    missing: list[MissingField] = Field(description="Empty when the profile is complete")
    blocked_actions: list[BlockedAction] = Field(description="Empty when the profile is complete")
    next: list[NextStep] = Field(description="Contact first, then route; empty when complete")


class ContactRequest(BaseModel):
    contact_name: str = Field(max_length=200)
    contact_email: str = Field(max_length=254)
    contact_url: str | None = Field(default=None, description="https URL; validated when non-empty")


class RouteRequest(BaseModel):
    deal_route: str = Field(
        description="Opaque https route base: no credentials, query or fragment"
    )
    route_protocol_binding: ProtocolBinding | None = Field(
        default=None, description="JSONRPC, HTTP+JSON or {bindings_base}/webhook-v1"
    )
    agent_card_url: str | None = Field(
        default=None,
        description="https URL of the agent card document: no credentials, query, fragment "
        "or trailing slash; the host a domain name (not localhost, not an IP address)",
    )


class WalletChallengeRequest(BaseModel):
    address: str = Field(
        max_length=42, description="The paying wallet: 0x and 40 hex digits (any case)"
    )


class WalletChallengeOut(BaseModel):
    message: str = Field(
        description="EIP-4361 Sign-In with Ethereum text: sign it as given (EIP-191 "
        "personal_sign) with the wallet, once, before expires_at"
    )
    expires_at: Timestamp


class WalletRecoverRequest(BaseModel):
    message: str = Field(max_length=4096, description="The challenge's message, unchanged")
    signature: str = Field(max_length=140, description="The wallet's signature, 0x and 130 hex")


class WalletRecovered(BaseModel):
    account_id: Uuid
    api_key: str = Field(
        description="The account's new key, shown this once; the old one is refused already"
    )
