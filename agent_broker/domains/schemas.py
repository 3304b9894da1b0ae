from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agent_broker.http.responses import Uri, omitted_when_unset


class DomainChallengeOut(BaseModel):
    domain: str = Field(description="Registrable domain (eTLD+1) of the deal_route's host")
    url: Uri = Field(description="Where the token must be served: https, at the apex")
    token: str = Field(description="Derived from account and domain; stable across calls")
    verified: bool = Field(description="The account already proved a domain")
    grant_pending: bool = Field(description="A domain was proved but its credit is still owed")
    grant_micro: int = Field(description="Credit paid for a first proof; 0: none at present")
    instructions: str


class DomainVerificationOut(BaseModel):
    domain: str
    verified: Literal[True] = Field(description="Always true: a failed proof is a 4xx")
    granted: bool = Field(description="Whether this call credited the welcome grant")
    granted_micro: int = Field(description="0 when granted is false")
    detail: str
    grant_reason: Literal["grant_cap_reached"] | None = omitted_when_unset(
        description="Only when a grant was due and the daily cap refused it"
    )
