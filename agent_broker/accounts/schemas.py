from __future__ import annotations

from pydantic import BaseModel, Field, StrictBool


class RegisterAccountRequest(BaseModel):
    accepted_terms: StrictBool | None = Field(
        default=None, description="Required; must be true (otherwise 428 terms_required)."
    )


class NextStep(BaseModel):
    action: str = Field(description="set_contact or set_route")
    method: str
    path: str


class SetupRequired(BaseModel):
    missing: list[str]
    blocked_actions: list[str]
    next: list[NextStep]


class RegisterAccountResponse(BaseModel):
    account_id: str
    api_key: str | None = Field(default=None, description="Only on the 201; shown once.")
    existing: bool
    account_setup_required: SetupRequired | None = None


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
    account_id: str
    handle: str
    balance_micro: int
    held_micro: int
    status: str
    key_preview: str
    created_at: str
    reputation: ReputationOut


class ContactOut(BaseModel):
    contact_name: str | None
    contact_email: str | None
    contact_url: str | None


class AccountProfileOut(BaseModel):
    account_id: str
    status: str
    balance_credits: int
    key_preview: str
    contact: ContactOut | None
    deal_route: str | None
    route_protocol_binding: str | None
    agent_card_url: str | None
    missing: list[str]
    blocked_actions: list[str]
    next: list[NextStep]


class ContactRequest(BaseModel):
    contact_name: str = Field(max_length=200)
    contact_email: str = Field(max_length=254)
    contact_url: str | None = Field(default=None, description="https URL; validated when non-empty")


class RouteRequest(BaseModel):
    deal_route: str = Field(description="Opaque https route base")
    route_protocol_binding: str | None = Field(
        default=None, description="JSONRPC, HTTP+JSON or {bindings_base}/webhook-v1"
    )
    agent_card_url: str | None = None
