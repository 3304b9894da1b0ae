"""PUT /v1/account/route: https route base, binding enum, agent card, whole replacement."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.support.accounts import profile, register
from tests.support.http import assert_problem

ROUTE = "/v1/account/route"
DEFAULT_WEBHOOK = "https://broker.test/bindings/webhook-v1"
CARD = "https://agents.dev/.well-known/agent-card.json"


def _declaration(client, agent) -> tuple:
    body = profile(client, agent)
    return body["deal_route"], body["route_protocol_binding"], body["agent_card_url"]


def _put(client, agent, **body):
    return client.put(ROUTE, headers=agent.headers, json=body)


def test_put_route_is_204_with_empty_body(client):
    agent = register(client)

    response = _put(client, agent, deal_route="https://agents.dev/deals/")

    assert response.status_code == 204, response.text
    assert response.content == b""
    assert _declaration(client, agent) == ("https://agents.dev/deals/", None, None)


def test_route_without_key_is_401(client):
    assert_problem(
        client.put(ROUTE, json={"deal_route": "https://agents.dev/deals/"}), 401, "unauthorized"
    )


def test_route_write_does_not_touch_the_contact(client):
    agent = register(client)
    contact = client.put(
        "/v1/account/contact",
        headers=agent.headers,
        json={"contact_name": "Ops", "contact_email": "ops@agents.dev"},
    )
    assert contact.status_code == 204, contact.text

    assert _put(client, agent, deal_route="https://agents.dev/deals/").status_code == 204

    assert profile(client, agent)["contact"] == {
        "contact_name": "Ops",
        "contact_email": "ops@agents.dev",
    }


# --- deal_route --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "route",
    [
        "https://agents.dev/deals/",
        "https://agents.dev",
        "https://agents.dev:8443/a/b/c",
        "https://route.agents.dev/d/8f2a1c",
    ],
)
def test_https_route_bases_are_accepted(client, route):
    agent = register(client)

    assert _put(client, agent, deal_route=route).status_code == 204
    assert profile(client, agent)["deal_route"] == route


@pytest.mark.parametrize(
    "body",
    [
        {"deal_route": "http://agents.dev/deals/"},
        {"deal_route": "ftp://agents.dev/deals/"},
        {"deal_route": "agents.dev/deals/"},
        {"deal_route": ""},
        {"deal_route": "https://"},
        {"deal_route": "https://user:secret@agents.dev/deals/"},
        {"deal_route": "https://user@agents.dev/deals/"},
        {"deal_route": "https://agents.dev/deals/?token=abc"},
        {"deal_route": "https://agents.dev/deals/#frag"},
        {"deal_route": "https://agents.dev/deals/?"},
        {"deal_route": "https://agents.dev/deals/#"},
        {"deal_route": None},
        {"deal_route": 42},
        {},
        {"route_protocol_binding": "JSONRPC"},
    ],
    ids=[
        "http",
        "ftp",
        "no-scheme",
        "empty",
        "no-host",
        "userinfo-password",
        "userinfo-user",
        "query",
        "fragment",
        "empty-query",
        "empty-fragment",
        "null",
        "number",
        "missing",
        "missing-with-binding",
    ],
)
def test_invalid_deal_route_is_400_and_changes_nothing(client, body):
    agent = register(client)

    assert_problem(_put(client, agent, **body), 400, "invalid_input")
    assert _declaration(client, agent) == (None, None, None)


def test_refused_write_keeps_the_earlier_declaration(client):
    agent = register(client)
    ok = _put(
        client,
        agent,
        deal_route="https://agents.dev/deals/",
        route_protocol_binding="JSONRPC",
        agent_card_url=CARD,
    )
    assert ok.status_code == 204, ok.text

    assert_problem(_put(client, agent, deal_route="http://agents.dev/"), 400, "invalid_input")
    assert _declaration(client, agent) == ("https://agents.dev/deals/", "JSONRPC", CARD)


# --- route_protocol_binding --------------------------------------------------------------


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", DEFAULT_WEBHOOK])
def test_each_binding_in_the_enum_is_accepted(client, binding):
    agent = register(client)

    response = _put(
        client, agent, deal_route="https://agents.dev/deals/", route_protocol_binding=binding
    )

    assert response.status_code == 204, response.text
    assert profile(client, agent)["route_protocol_binding"] == binding


def test_null_binding_is_accepted_as_none(client):
    agent = register(client)

    response = _put(
        client, agent, deal_route="https://agents.dev/deals/", route_protocol_binding=None
    )

    assert response.status_code == 204, response.text
    assert profile(client, agent)["route_protocol_binding"] is None


@pytest.mark.parametrize(
    "binding",
    [
        "GRPC",
        "jsonrpc",
        "HTTP+JSON ",
        "",
        "https://broker.test/bindings/webhook-v2",
        "https://broker.test/webhook-v1",
        "https://other.test/bindings/webhook-v1",
    ],
)
def test_binding_outside_the_enum_is_400_listing_valid_values(client, binding):
    agent = register(client)

    response = _put(
        client, agent, deal_route="https://agents.dev/deals/", route_protocol_binding=binding
    )

    body = assert_problem(response, 400, "invalid_input")
    for valid in ("JSONRPC", "HTTP+JSON", DEFAULT_WEBHOOK):
        assert valid in body["detail"], body["detail"]
    assert _declaration(client, agent) == (None, None, None)


def test_bindings_base_setting_changes_the_webhook_identifier(make_app):
    app = make_app(bindings_base="https://bindings.example.org")
    with TestClient(app, raise_server_exceptions=False) as client:
        agent = register(client)
        custom = "https://bindings.example.org/webhook-v1"

        refused = _put(
            client,
            agent,
            deal_route="https://agents.dev/deals/",
            route_protocol_binding=DEFAULT_WEBHOOK,
        )
        body = assert_problem(refused, 400, "invalid_input")
        assert custom in body["detail"], body["detail"]

        accepted = _put(
            client, agent, deal_route="https://agents.dev/deals/", route_protocol_binding=custom
        )
        assert accepted.status_code == 204, accepted.text
        assert profile(client, agent)["route_protocol_binding"] == custom


# --- agent_card_url ----------------------------------------------------------------------


def test_agent_card_url_is_optional_and_reads_back(client):
    agent = register(client)

    response = _put(client, agent, deal_route="https://agents.dev/deals/", agent_card_url=CARD)

    assert response.status_code == 204, response.text
    assert _declaration(client, agent) == ("https://agents.dev/deals/", None, CARD)


@pytest.mark.parametrize("card", ["not a uri", "agents.dev/card.json", "https://"])
def test_agent_card_url_that_is_not_a_uri_is_400(client, card):
    agent = register(client)

    response = _put(client, agent, deal_route="https://agents.dev/deals/", agent_card_url=card)

    assert_problem(response, 400, "invalid_input")
    assert _declaration(client, agent) == (None, None, None)


@pytest.mark.parametrize(
    "card",
    [
        CARD,
        "https://agents.dev/agent-card.json",
        "https://Agents.DEV:8443/cards/seller",
        "https://card.route.agents.dev/v2/card.json",
        "https://bücher.de/.well-known/agent-card.json",
        "https://agents.dev./.well-known/agent-card.json",
        "https://localhost-agents.dev/card.json",
        "https://agents.localhost.dev/card.json",
        "https://127.0.0.1.agents.dev/card.json",
        "https://0x7f.agents.dev/card.json",
    ],
)
def test_agent_card_urls_naming_a_document_on_a_domain_are_accepted(client, card):
    agent = register(client)

    response = _put(client, agent, deal_route="https://agents.dev/deals/", agent_card_url=card)

    assert response.status_code == 204, response.text
    assert _declaration(client, agent) == ("https://agents.dev/deals/", None, card)


@pytest.mark.parametrize(
    ("card", "named"),
    [
        ("https://agents.dev/card.json?v=2", "query"),
        ("https://agents.dev/card.json?", "query"),
        ("https://agents.dev/card.json#me", "fragment"),
        ("https://agents.dev/card.json#", "fragment"),
        ("https://agents.dev/.well-known/", "slash"),
        ("https://agents.dev/", "slash"),
        ("https://agents.dev", "slash"),
        ("http://agents.dev/card.json", "https"),
        ("HTTP://agents.dev/card.json", "https"),
        ("https://user:pw@agents.dev/card.json", "credentials"),
        ("https://localhost/card.json", "localhost"),
        ("https://LocalHost/card.json", "localhost"),
        ("https://localhost./card.json", "localhost"),
        ("https://agent.localhost/card.json", "localhost"),
        ("https://a.b.LOCALHOST/card.json", "localhost"),
        ("https://ｌｏｃａｌｈｏｓｔ/card.json", "localhost"),
        ("https://127.0.0.1/card.json", "IP address"),
        ("https://93.184.216.34:8443/card.json", "IP address"),
        ("https://[::1]/card.json", "IP address"),
        ("https://[2606:4700::6810:84e5]/card.json", "IP address"),
        ("https://[::ffff:127.0.0.1]/card.json", "IP address"),
        ("https://2130706433/card.json", "IP address"),
        ("https://0x7f.1/card.json", "IP address"),
        ("https://0x7f000001/card.json", "IP address"),
        ("https://0177.0.0.1/card.json", "IP address"),
        ("https://127.1/card.json", "IP address"),
        ("https://1.2.3.4./card.json", "IP address"),
        ("https://１２７.０.０.１/card.json", "IP address"),
        ("https://%31%32%37.0.0.1/card.json", "not a valid domain name"),
    ],
)
def test_agent_card_url_refusals_name_what_was_wrong(client, card, named):
    agent = register(client)

    response = _put(client, agent, deal_route="https://agents.dev/deals/", agent_card_url=card)

    body = assert_problem(response, 400, "invalid_input")
    assert "agent_card_url" in body["detail"] and named in body["detail"], body["detail"]
    assert _declaration(client, agent) == (None, None, None)


# --- a write replaces the whole declaration ----------------------------------------------


def test_write_replaces_the_whole_declaration(client):
    agent = register(client)
    first = _put(
        client,
        agent,
        deal_route="https://agents.dev/deals/",
        route_protocol_binding="HTTP+JSON",
        agent_card_url=CARD,
    )
    assert first.status_code == 204, first.text
    assert _declaration(client, agent) == ("https://agents.dev/deals/", "HTTP+JSON", CARD)

    second = _put(client, agent, deal_route="https://agents.dev/v2/deals/")

    assert second.status_code == 204, second.text
    assert _declaration(client, agent) == ("https://agents.dev/v2/deals/", None, None)


def test_omitting_one_optional_field_clears_only_that_field(client):
    agent = register(client)
    first = _put(
        client,
        agent,
        deal_route="https://agents.dev/deals/",
        route_protocol_binding="JSONRPC",
        agent_card_url=CARD,
    )
    assert first.status_code == 204, first.text

    second = _put(
        client, agent, deal_route="https://agents.dev/deals/", route_protocol_binding="JSONRPC"
    )

    assert second.status_code == 204, second.text
    assert _declaration(client, agent) == ("https://agents.dev/deals/", "JSONRPC", None)


def test_route_is_set_on_the_caller_only(client):
    caller = register(client)
    other = register(client)

    response = client.put(
        ROUTE,
        headers=caller.headers,
        params={"account_id": other.account_id},
        json={"deal_route": "https://agents.dev/deals/", "account_id": other.account_id},
    )

    assert response.status_code == 204, response.text
    assert profile(client, caller)["deal_route"] == "https://agents.dev/deals/"
    assert _declaration(client, other) == (None, None, None)
