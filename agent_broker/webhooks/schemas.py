from __future__ import annotations

from pydantic import BaseModel, Field

from agent_broker.http.responses import Uri


class WebhookRequest(BaseModel):
    url: str = Field(
        max_length=2048,
        description="https URL the events are POSTed to: no credentials, query or fragment; "
        "the host a domain name (not localhost, not an IP address)",
    )


class WebhookOut(BaseModel):
    url: Uri
    secret: str = Field(
        description="Standard Webhooks signing secret (whsec_...), shown once; a new one on "
        "every PUT"
    )
