"""Key self-service (agent_broker/accounts/dashboard.py): POST /dashboard/keys disables the
account's key (403 api_key_disabled everywhere with it), POST /dashboard/keys/rotate issues
a new key, refuses the old one at once and reactivates the account, keeping its balance,
listings and handle. Both take the key or a linked dashboard session; a disabled operator
rotates through a session, or the service's operator with `agent-broker admin rotate-key`."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from tests.support.accounts import Agent, fund, register
from tests.support.http import assert_problem, new_key
from tests.support.identity import bearer
from tests.support.market import LISTING

KEY_SHAPE = re.compile(r"ab_live_[0-9a-f]{32}")


def post_listing(client, headers):
    return client.post(
        "/v1/listings", json=LISTING, headers={**headers, "Idempotency-Key": new_key()}
    )


def assert_rotated(body: dict, old_key: str) -> str:
    assert set(body) == {"api_key", "key_preview"}
    key = body["api_key"]
    assert KEY_SHAPE.fullmatch(key), key
    assert key != old_key
    assert body["key_preview"] == f"{key[:4]}...{key[-4:]}"
    return key


# --- disable ---------------------------------------------------------------------------------


def test_disabling_with_the_key_refuses_that_key_everywhere(app, client, linked):
    agent, session = linked
    fund(app, agent.account_id, 10_000_000, real_money=True)
    response = client.post("/dashboard/keys", headers=agent.headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True}

    for refused in (
        client.get("/v1/account", headers=agent.headers),
        client.get("/v1/feed", headers=agent.headers),
        post_listing(client, agent.headers),
        client.post("/dashboard/keys/rotate", headers=agent.headers),
        client.post("/dashboard/keys", headers=agent.headers),
    ):
        assert_problem(refused, 403, "api_key_disabled")

    view = client.get("/v1/account", headers=session)
    assert view.status_code == 200, view.text
    assert view.json()["account_id"] == agent.account_id
    assert view.json()["status"] == "inactive"


def test_disabling_through_a_session_refuses_the_key(client, linked):
    agent, session = linked
    assert client.post("/dashboard/keys", headers=session).json() == {"ok": True}
    assert_problem(client.get("/v1/account", headers=agent.headers), 403, "api_key_disabled")
    # Disabling twice through the session is harmless.
    assert client.post("/dashboard/keys", headers=session).status_code == 200
    assert client.get("/v1/account", headers=session).json()["status"] == "inactive"


def test_disabling_touches_only_the_callers_account(client, linked):
    agent, _ = linked
    other = register(client)
    assert client.post("/dashboard/keys", headers=agent.headers).status_code == 200
    assert client.get("/v1/account", headers=other.headers).json()["status"] == "active"


def test_a_disabled_key_cannot_link_a_new_identity(client, session_token):
    agent = register(client)
    assert client.post("/dashboard/keys", headers=agent.headers).status_code == 200
    intruder = bearer(session_token("someone-with-the-leaked-key"))
    assert_problem(
        client.get("/v1/account", headers={**intruder, **agent.headers}),
        403,
        "api_key_disabled",
    )
    assert_problem(client.post("/dashboard/keys/rotate", headers=intruder), 401, "unauthorized")


# --- rotate ----------------------------------------------------------------------------------


def test_rotating_with_the_key_replaces_it_and_keeps_the_account(app, client):
    agent = register(client)
    fund(app, agent.account_id, 7_000_000, real_money=True)
    listing = post_listing(client, agent.headers)
    assert listing.status_code == 201, listing.text
    before = client.get("/v1/account", headers=agent.headers).json()
    mine_before = client.get("/v1/listings/mine", headers=agent.headers).json()["listings"]

    response = client.post("/dashboard/keys/rotate", headers=agent.headers)
    assert response.status_code == 200, response.text
    new = assert_rotated(response.json(), agent.api_key)

    assert_problem(client.get("/v1/account", headers=agent.headers), 401, "unauthorized")
    assert_problem(
        client.post("/dashboard/keys/rotate", headers=agent.headers), 401, "unauthorized"
    )
    rotated = Agent(account_id=agent.account_id, api_key=new)
    after = client.get("/v1/account", headers=rotated.headers)
    assert after.status_code == 200, after.text
    after = after.json()
    assert after["key_preview"] == response.json()["key_preview"] != before["key_preview"]
    for kept in ("account_id", "handle", "balance_micro", "held_micro", "status", "reputation"):
        assert after[kept] == before[kept], kept
    assert after["balance_micro"] > 0
    mine_after = client.get("/v1/listings/mine", headers=rotated.headers).json()["listings"]
    assert mine_after == mine_before and len(mine_after) == 1
    assert post_listing(client, rotated.headers).status_code == 201


def test_each_rotation_issues_a_different_key(client):
    agent = register(client)
    first = assert_rotated(
        client.post("/dashboard/keys/rotate", headers=agent.headers).json(), agent.api_key
    )
    second = client.post("/dashboard/keys/rotate", headers={"x-api-key": first})
    assert second.status_code == 200, second.text
    latest = assert_rotated(second.json(), first)
    assert_problem(client.get("/v1/account", headers={"x-api-key": first}), 401, "unauthorized")
    assert client.get("/v1/account", headers={"x-api-key": latest}).status_code == 200


def test_a_disabled_operator_rotates_through_a_session(app, client, linked):
    agent, session = linked
    fund(app, agent.account_id, 3_000_000)
    assert client.post("/dashboard/keys", headers=agent.headers).status_code == 200
    assert client.get("/v1/account", headers=session).json()["status"] == "inactive"

    response = client.post("/dashboard/keys/rotate", headers=session)
    assert response.status_code == 200, response.text
    new = assert_rotated(response.json(), agent.api_key)

    view = client.get("/v1/account", headers={"x-api-key": new})
    assert view.status_code == 200, view.text
    assert view.json()["status"] == "active"
    assert view.json()["account_id"] == agent.account_id
    assert view.json()["balance_micro"] == 3_000_000
    # The old key is unknown now (401), no longer merely disabled (403).
    assert_problem(client.get("/v1/account", headers=agent.headers), 401, "unauthorized")
    # The session keeps reaching the account, with the new key alongside too.
    assert client.get("/v1/account", headers=session).json()["status"] == "active"
    both = client.get("/v1/account", headers={**session, "x-api-key": new})
    assert both.status_code == 200, both.text


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/dashboard/keys", "/dashboard/keys/rotate"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-api-key": ""},
        {"x-api-key": "not-a-key"},
        {"x-api-key": "ab_live_" + "0" * 32},
        {"x-api-key": "ab_live_" + "f" * 500},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer "},
    ],
    ids=["none", "empty", "malformed", "unknown", "oversized", "basic-auth", "empty-bearer"],
)
def test_the_key_routes_refuse_a_missing_or_bad_credential(client, path, headers):
    agent = register(client)
    assert_problem(client.post(path, headers=headers), 401, "unauthorized")
    # Nothing changed for the account.
    view = client.get("/v1/account", headers=agent.headers)
    assert view.status_code == 200 and view.json()["status"] == "active"


# --- interface ---------------------------------------------------------------------------------


def test_the_openapi_document_describes_both_routes_and_the_bearer_scheme(client):
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]

    def ok_schema(path: str) -> dict:
        operation = spec["paths"][path]["post"]
        ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        return schemas[ref.rsplit("/", 1)[1]]

    disabled = ok_schema("/dashboard/keys")
    assert set(disabled["properties"]) == {"ok"}
    assert disabled["properties"]["ok"]["type"] == "boolean"
    rotated = ok_schema("/dashboard/keys/rotate")
    assert set(rotated["properties"]) == {"api_key", "key_preview"}
    assert set(rotated["required"]) == {"api_key", "key_preview"}

    schemes = spec["components"]["securitySchemes"]
    bearers = [
        name for name, s in schemes.items() if s == {**s, "type": "http", "scheme": "bearer"}
    ]
    assert bearers == ["HTTPBearer"], schemes
    for path in ("/dashboard/keys", "/dashboard/keys/rotate", "/v1/account"):
        operation = spec["paths"][path]["post" if path.startswith("/dashboard") else "get"]
        names = {name for requirement in operation["security"] for name in requirement}
        assert {"HTTPBearer", "APIKeyHeader"} <= names, (path, operation["security"])
        assert {"401", "403", "409"} <= set(operation["responses"]) or path == "/v1/account"
    # A key-only route does not advertise the bearer scheme.
    feed = spec["paths"]["/v1/feed"]["get"]
    assert "HTTPBearer" not in {name for req in feed.get("security", []) for name in req}


# --- the operator's way back ---------------------------------------------------------------


def rotate_by_operator(*arguments: str):  # noqa: ANN201
    return CliRunner().invoke(cli, ["admin", "rotate-key", *arguments])


def test_the_operator_rotates_a_disabled_key_no_session_reaches(app, client, broker_env):
    agent = register(client)
    fund(app, agent.account_id, 10_000_000, real_money=True)
    assert client.post("/dashboard/keys", headers=agent.headers).status_code == 200
    assert_problem(client.get("/v1/account", headers=agent.headers), 403, "api_key_disabled")

    result = rotate_by_operator(agent.account_id)
    assert result.exit_code == 0, result.output
    key = result.stdout.removesuffix("\n")  # the key alone on standard output
    assert KEY_SHAPE.fullmatch(key) and key != agent.api_key
    assert key not in result.stderr and agent.account_id in result.stderr

    view = client.get("/v1/account", headers={"x-api-key": key})
    assert view.status_code == 200, view.text
    assert view.json()["status"] == "active"
    assert view.json()["balance_micro"] == 10_000_000
    assert_problem(client.get("/v1/account", headers=agent.headers), 401, "unauthorized")


def test_the_operator_rotation_refuses_unknown_and_malformed_accounts(client, broker_env):
    unknown = rotate_by_operator("00000000-0000-4000-8000-000000000000")
    assert unknown.exit_code == 1 and "no account" in unknown.stderr
    assert unknown.stdout == ""
    malformed = rotate_by_operator("not-an-id")
    assert malformed.exit_code == 2 and malformed.stdout == ""
