"""Every route the application serves is in the agent guide's route index, and the index
names no route the application does not serve."""

from __future__ import annotations

from tests.support.docs import AGENT_GUIDE, route_index


def test_the_app_serves_what_the_scan_expects(served):
    assert {"POST /v1/listings", "GET /v1/threads/{}", "/mcp"} <= served
    assert not any(route.endswith("/icon.svg") for route in served)  # not in the schema


def test_every_served_route_is_in_the_agent_guide(served):
    indexed = route_index(AGENT_GUIDE.read_text(encoding="utf-8"))
    missing = sorted(served - indexed)
    assert not missing, f"routes the agent guide's 'Every route' lacks: {missing}"


def test_the_agent_guide_indexes_no_route_that_is_not_served(every_route):
    """The index may name routes the OpenAPI document leaves out (the HTML pages,
    /metrics), but none the app does not serve."""
    indexed = route_index(AGENT_GUIDE.read_text(encoding="utf-8"))
    assert not sorted(indexed - every_route)
