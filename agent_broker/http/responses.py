"""OpenAPI declarations of the problem documents a route can answer."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from pydantic import BaseModel, Field

from agent_broker.problems import PROBLEM_MEDIA_TYPE


class ProblemDetail(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    reason: str
    retryAfterSeconds: int | None = Field(default=None, description="Present on 429")


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        status: {
            "model": ProblemDetail,
            "description": HTTPStatus(status).phrase,
            "content": {PROBLEM_MEDIA_TYPE: {}},
        }
        for status in statuses
    }
