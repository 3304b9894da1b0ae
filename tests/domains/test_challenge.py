"""GET /v1/account/domain: the challenge of docs/interface.md §8, for the registrable domain of
the account's deal route."""

from __future__ import annotations

import re

import pytest

from agent_broker.domains.registrable import NoRegistrableDomain, registrable_domain
from tests.support.accounts import register
from tests.support.domains import challenge, set_route
from tests.support.http import assert_problem

FIELDS = {"domain", "url", "token", "verified", "grant_pending", "grant_micro", "instructions"}


def test_the_challenge_names_the_registrable_domain_and_its_apex_file(client):
    agent = register(client)
    set_route(client, agent, "https://api.deals.shop.example.co.uk/route/")
    body = challenge(client, agent)
    assert set(body) == FIELDS
    assert body["domain"] == "example.co.uk"
    assert body["url"] == "https://example.co.uk/.well-known/svc-challenge.txt"
    assert re.fullmatch(r"abchal_[0-9a-f]{16}", body["token"])
    assert body["verified"] is False
    assert body["grant_pending"] is False
    assert body["grant_micro"] == 10_000_000
    assert body["url"] in body["instructions"]


def test_the_token_is_stable_and_differs_per_account_and_domain(client):
    first, second = register(client), register(client)
    set_route(client, first, "https://agents.dev/a/")
    set_route(client, second, "https://agents.dev/b/")
    token = challenge(client, first)["token"]
    assert challenge(client, first)["token"] == token
    assert challenge(client, second)["token"] != token
    # Another path on the same registrable domain: the same token.
    set_route(client, first, "https://www.agents.dev/other/")
    assert challenge(client, first)["token"] == token
    set_route(client, first, "https://buyer.dev/a/")
    assert challenge(client, first)["token"] != token


def test_the_token_depends_on_the_deployment_secret(make_domain_app):
    from fastapi.testclient import TestClient

    tokens = []
    for secret in ("first-secret-0123456789abcdef-0123", "other-secret-0123456789abcdef-0123"):
        with TestClient(make_domain_app(key_hash_secret=secret)) as client:
            agent = register(client)
            set_route(client, agent, "https://agents.dev/a/")
            body = challenge(client, agent)
            assert agent.account_id.replace("-", "")[:16] not in body["token"]
            tokens.append((agent.account_id, body["token"]))
    assert tokens[0][1] != tokens[1][1]


def test_no_deal_route_yet_is_a_409(client):
    agent = register(client)
    body = assert_problem(
        client.get("/v1/account/domain", headers=agent.headers), 409, "missing_deal_route_self"
    )
    assert "/v1/account/route" in body["detail"]


@pytest.mark.parametrize(
    "route",
    ["https://203.0.113.7/route/", "https://[2001:db8::1]/route/", "https://co.uk/route/"],
)
def test_a_route_without_a_registrable_domain_is_a_400(client, route):
    agent = register(client)
    set_route(client, agent, route)
    body = assert_problem(
        client.get("/v1/account/domain", headers=agent.headers), 400, "invalid_input"
    )
    assert "registrable domain" in body["detail"]


def test_grant_micro_follows_the_deployment_setting(make_domain_app):
    from fastapi.testclient import TestClient

    with TestClient(make_domain_app(domain_grant_micro=0)) as client:
        agent = register(client)
        set_route(client, agent, "https://agents.dev/a/")
        body = challenge(client, agent)
    assert body["grant_micro"] == 0
    assert "no welcome credit" in body["instructions"]


def test_the_challenge_needs_a_key(client):
    assert_problem(client.get("/v1/account/domain"), 401, "unauthorized")
    assert_problem(client.post("/v1/account/domain/verify"), 401, "unauthorized")
    bad = {"x-api-key": "ab_live_" + "0" * 32}
    assert_problem(client.get("/v1/account/domain", headers=bad), 401, "unauthorized")
    assert_problem(client.post("/v1/account/domain/verify", headers=bad), 401, "unauthorized")


@pytest.mark.parametrize(
    ("route", "domain"),
    [
        ("https://Agents.DEV./x", "agents.dev"),
        ("https://a.b.c.example.com/", "example.com"),
        ("https://bücher.de/", "xn--bcher-kva.de"),
        ("https://shop.example.co.uk:8443/x", "example.co.uk"),
        # A hosting platform's shared suffix is not a registrable domain of its users (the
        # list's ICANN section only): the apex belongs to the platform.
        ("https://me.github.io/", "github.io"),
    ],
)
def test_registrable_domain(route, domain):
    assert registrable_domain(route) == domain


@pytest.mark.parametrize("route", ["https://localhost/", "https://uk/", "https://10.0.0.1/"])
def test_no_registrable_domain(route):
    with pytest.raises(NoRegistrableDomain):
        registrable_domain(route)
