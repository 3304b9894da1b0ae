"""GET /v1/account/profile: shape, setup requirements and balance in credits."""

from __future__ import annotations

import pytest

from tests.support.accounts import PROFILE, complete_profile, fund, profile, register
from tests.support.http import assert_problem

CONTACT_STEP = {"action": "set_contact", "method": "PUT", "path": "/v1/account/contact"}
ROUTE_STEP = {"action": "set_route", "method": "PUT", "path": "/v1/account/route"}
BLOCKED = ["open_thread", "receive_thread"]
FIELDS = {
    "account_id",
    "status",
    "balance_credits",
    "key_preview",
    "contact",
    "deal_route",
    "route_protocol_binding",
    "agent_card_url",
    "missing",
    "blocked_actions",
    "next",
}


def _put_contact(client, agent) -> None:
    response = client.put(
        "/v1/account/contact",
        headers=agent.headers,
        json={"contact_name": "Ops Team", "contact_email": "ops@agents.dev"},
    )
    assert response.status_code == 204, response.text


def _put_route(client, agent, **extra) -> None:
    response = client.put(
        "/v1/account/route",
        headers=agent.headers,
        json={"deal_route": "https://agents.dev/deals/", **extra},
    )
    assert response.status_code == 204, response.text


def test_new_account_profile_is_incomplete(client):
    agent = register(client)

    body = profile(client, agent)

    assert set(body) == FIELDS
    assert body["account_id"] == agent.account_id
    assert body["status"] == "active"
    assert body["balance_credits"] == 0
    assert body["key_preview"] == f"{agent.api_key[:4]}...{agent.api_key[-4:]}"
    assert body["contact"] is None
    assert body["deal_route"] is None
    assert body["route_protocol_binding"] is None
    assert body["agent_card_url"] is None
    assert body["missing"] == ["contact_name", "contact_email", "deal_route"]
    assert body["blocked_actions"] == BLOCKED
    assert body["next"] == [CONTACT_STEP, ROUTE_STEP]


def test_profile_requirements_match_the_registration_response(client):
    registered = client.post("/v1/account/register", json={"accepted_terms": True}).json()
    body = client.get(PROFILE, headers={"x-api-key": registered["api_key"]}).json()

    assert {k: body[k] for k in ("missing", "blocked_actions", "next")} == registered[
        "account_setup_required"
    ]


def test_contact_only_leaves_the_route_missing(client):
    agent = register(client)
    _put_contact(client, agent)

    body = profile(client, agent)

    assert body["contact"] == {
        "contact_name": "Ops Team",
        "contact_email": "ops@agents.dev",
    }
    assert body["deal_route"] is None
    assert body["missing"] == ["deal_route"]
    assert body["blocked_actions"] == BLOCKED
    assert body["next"] == [ROUTE_STEP]


def test_route_only_leaves_the_contact_missing(client):
    agent = register(client)
    _put_route(client, agent)

    body = profile(client, agent)

    assert body["contact"] is None
    assert body["deal_route"] == "https://agents.dev/deals/"
    assert body["missing"] == ["contact_name", "contact_email"]
    assert body["blocked_actions"] == BLOCKED
    assert body["next"] == [CONTACT_STEP]


def test_complete_profile_has_nothing_missing(client):
    agent = register(client)
    complete_profile(client, agent)

    body = profile(client, agent)

    assert body["missing"] == []
    assert body["blocked_actions"] == []
    assert body["next"] == []
    assert body["contact"]["contact_name"] == "Ops Team"
    assert body["contact"]["contact_email"] == "ops@agents.dev"
    assert body["deal_route"] == "https://agents.dev/deals/"
    assert body["route_protocol_binding"] == "JSONRPC"


def test_route_protocol_binding_is_never_missing(client):
    agent = register(client)
    _put_contact(client, agent)
    _put_route(client, agent)  # no binding, no agent card

    body = profile(client, agent)

    assert body["route_protocol_binding"] is None
    assert body["agent_card_url"] is None
    assert body["missing"] == []
    assert body["blocked_actions"] == []
    assert body["next"] == []


def test_route_protocol_binding_absent_from_missing_on_a_new_account(client):
    agent = register(client)
    body = profile(client, agent)
    assert "route_protocol_binding" not in body["missing"]
    assert "agent_card_url" not in body["missing"]


@pytest.mark.parametrize(
    ("micro", "credits"),
    [(0, 0), (499, 0), (500, 1), (999, 1), (1_000_000, 2000), (1_000_499, 2000), (1_000_500, 2001)],
)
def test_balance_credits_truncates_micro_to_whole_credits(app, client, micro, credits):
    agent = register(client)
    if micro:
        fund(app, agent.account_id, micro)

    assert profile(client, agent)["balance_credits"] == credits


def test_profile_without_key_is_401(client):
    assert_problem(client.get(PROFILE), 401, "unauthorized")


def test_profile_with_unknown_key_is_401(client):
    register(client)
    assert_problem(client.get(PROFILE, headers={"x-api-key": "nope"}), 401, "unauthorized")
