"""Response models of the meta routes (they shape /openapi.json)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_broker.http.responses import Day, Timestamp, Uri, omitted_when_unset

ComponentState = Literal[
    "operational", "degraded_performance", "partial_outage", "major_outage", "no_data"
]


Reach = Literal["reachable", "unreachable"]


class Dependencies(BaseModel):
    database: Reach = Field(description="whether this worker reaches the database now")
    redis: Literal["reachable", "unreachable", "not_configured"] = Field(
        description="the shared rate-limit store; not_configured without BROKER_REDIS_URL "
        "(rate limits fail open while it is unreachable)"
    )


class Health(BaseModel):
    status: Literal["ok", "degraded"] = Field(
        description="degraded while the database or Redis is unreachable; the answer is "
        "200 either way: the process itself is alive"
    )
    build: str = Field(
        pattern="^[0-9a-f]{12}$", description="12-hex build fingerprint; not a version"
    )
    database: Reach = Field(description="whether this worker reaches the database now")
    redis: Literal["reachable", "unreachable", "not_configured"] = Field(
        description="the shared rate-limit store; not_configured without BROKER_REDIS_URL"
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
    dependencies: Dependencies = Field(
        description="reachability now, as this worker sees it; while the database is "
        "unreachable the rest of the document is the last one computed (or no_data)"
    )


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


# POST /a2a (agent_broker.meta.a2a). The a2a-sdk reads and answers the body itself; these
# models only describe it in /openapi.json.
A2aMethod = Literal[
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
]


class JsonRpcRequest(BaseModel):
    """A JSON-RPC 2.0 request naming an A2A 1.0 method."""

    model_config = ConfigDict(extra="forbid")  # the SDK refuses other members (-32600)
    jsonrpc: Literal["2.0"]
    id: str | int | None = Field(
        default=None, description="Echoed in the answer (null there when omitted)"
    )
    method: A2aMethod = Field(
        description="SendMessage is answered with the onboarding guide; the streaming and "
        "push-notification methods and GetExtendedAgentCard answer an error, as the agent "
        "card declares them unsupported; any other name answers -32601"
    )
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="The method's parameters as A2A 1.0 defines them; SendMessage: "
        '{"message": {"messageId", "role": "ROLE_USER", "parts": [{"text"}]}}',
    )


class JsonRpcError(BaseModel):
    code: int = Field(
        description="-32700 unreadable JSON, -32600 not a JSON-RPC request, -32601 unknown "
        "method, -32602 invalid params, -32001 task not found, -32003 push notifications not "
        "supported, -32004 unsupported operation, -32009 A2A version not supported"
    )
    message: str
    data: Any = omitted_when_unset(description="Details (google.rpc.ErrorInfo entries)")


class JsonRpcResponse(BaseModel):
    """A JSON-RPC 2.0 response: `result` on success, `error` otherwise."""

    jsonrpc: Literal["2.0"]
    id: str | int | None = Field(description="The request's id; null when it could not be read")
    result: dict[str, Any] | None = omitted_when_unset(
        description="The method's result (SendMessage: {message}; ListTasks: {tasks, ...})"
    )
    error: JsonRpcError | None = omitted_when_unset(description="In place of result on failure")
