"""The certification status record (docs/interface.md §15), the answer of every certification
route."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_broker.http.responses import Timestamp, Uri, omitted_when_unset


class LastTest(BaseModel):
    """One probe's outcome."""

    at: Timestamp
    route: Uri | None = omitted_when_unset(
        description="the route probed; absent when the account had none to probe"
    )
    passed: bool
    status_code: int | None = omitted_when_unset(
        description="the route's HTTP status, if it answered"
    )
    detail: str


class CheckResult(LastTest):
    kind: str = Field(description="`test` (free, never counted) or `scheduled`")


class CertificationStatus(BaseModel):
    subscribed: bool = Field(description="a paid period is running")
    renew: bool = Field(description="the next period will be charged when this one ends")
    period_start: Timestamp | None = omitted_when_unset(description="the paid period's start")
    period_end: Timestamp | None = omitted_when_unset(description="the paid period's end")
    window_route: Uri | None = omitted_when_unset(
        description="the route whose scheduled checks count"
    )
    passing_now: bool = Field(description="the latest scheduled check of the current route passed")
    public_certified: bool = Field(description="the badge as of the last daily update")
    checked_on: str | None = omitted_when_unset(
        description="date (UTC) of the last daily badge update"
    )
    last_test: LastTest | None = omitted_when_unset(description="the last free test")
    recent: list[CheckResult] = Field(description="the latest probes, newest first")
