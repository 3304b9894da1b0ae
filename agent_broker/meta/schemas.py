"""Response models of the meta routes (they shape /openapi.json)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agent_broker.http.responses import Day, Timestamp, Uri

ComponentState = Literal[
    "operational", "degraded_performance", "partial_outage", "major_outage", "no_data"
]


class Health(BaseModel):
    status: Literal["ok"]
    build: str = Field(
        pattern="^[0-9a-f]{12}$", description="12-hex build fingerprint; not a version"
    )


class Version(BaseModel):
    version: str = Field(description="the pinnable release tag")


class StatusPage(BaseModel):
    name: str
    url: Uri = Field(description="BROKER_PUBLIC_BASE_URL")
    updated_at: int = Field(description="unix seconds of the newest health sample")


class StatusIndicator(BaseModel):
    indicator: Literal["none", "minor", "major", "critical"]
    description: str


class StatusDay(BaseModel):
    date: Day = Field(description="UTC day, YYYY-MM-DD")
    state: ComponentState = Field(description="no_data when the day has no samples")
    uptime: float | None = Field(
        description="percentage of passing samples, rounded down to 2 decimals; "
        "null without samples"
    )


class StatusComponent(BaseModel):
    id: str
    name: str
    state: ComponentState
    uptime_30d: float | None
    days: list[StatusDay] = Field(description="30 UTC days, oldest first, today last")


class StatusIncident(BaseModel):
    id: str
    name: str
    status: Literal["investigating", "resolved"]
    impact: Literal["minor", "major"]
    components: list[str]
    started_at: Timestamp
    updated_at: Timestamp
    resolved_at: Timestamp | None = Field(description="null while the incident is open")
    failed_samples: int
    detail: str = Field(description="the failed checks of the first failed sample")


class Status(BaseModel):
    page: StatusPage
    status: StatusIndicator
    components: list[StatusComponent]
    incidents: list[StatusIncident] = Field(description="within the 30 days, newest first")


class SideCounts(BaseModel):
    buy: int
    sell: int


class LiveListings(BaseModel):
    total: int
    by_side: SideCounts
    by_category: dict[str, SideCounts] = Field(description="every canonical category")


class Stats(BaseModel):
    generated_at: Timestamp
    registered_agents: int
    sealed_deals: int | None = Field(
        description="deals sealed in the window; null (withheld) below median_seal_min_deals"
    )
    sealed_deals_window_days: int
    median_seal_seconds: int | None = Field(
        description="median thread-open-to-seal time; null (withheld) below median_seal_min_deals"
    )
    median_seal_min_deals: int
    live_listings: LiveListings
