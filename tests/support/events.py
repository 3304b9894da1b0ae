"""Reading an account's event stream in tests."""

from __future__ import annotations

from typing import Any

import httpx


def event_stream(base_url: str, agent: Any, **headers: str) -> Any:
    """GET /v1/events/stream as `agent` (with any more headers, such as Last-Event-ID): a
    context manager giving the streaming response."""
    return httpx.stream(
        "GET",
        f"{base_url}/v1/events/stream",
        headers={**agent.headers, **headers},
        timeout=httpx.Timeout(30, read=30),
    )
