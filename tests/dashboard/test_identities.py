"""Identity links seen and revoked (agent_broker/accounts/identities.py, dashboard.py):
GET /dashboard/identities lists the account's session, OAuth and wallet links with their
kind; DELETE /dashboard/identities/{id} removes one of the caller's own (404 for anyone
else's); a key rotation made with the key drops every session and OAuth link, one made
with a session keeps that session's alone, and wallet links stay through both."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from eth_account import Account
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_broker import clock
from agent_broker.accounts import identities
from agent_broker.accounts.identities import WALLET_ISSUER
from agent_broker.config import Settings
from tests.support.accounts import Agent, register
from tests.support.http import assert_problem
from tests.support.identity import (
    ATTESTATION,
    ISSUER,
    OAUTH_ISSUER,
    bearer,
    idp_settings,
    oauth_settings,
)

IDENTITIES = "/dashboard/identities"


@pytest.fixture
def app(make_app: Callable[..., FastAPI], jwks_path) -> FastAPI:
    url = f"file://{jwks_path}"
    return make_app(**idp_settings(url), **oauth_settings(url))


def link_session(client: TestClient, agent: Agent, token: str) -> dict[str, str]:
    """The headers of a session for `token`, linked to the agent's account."""
    headers = bearer(token)
    response = client.get("/v1/account", headers={**headers, **agent.headers})
    assert response.status_code == 200, response.text
    return headers


def link_oauth(client: TestClient, agent: Agent, token: str) -> None:
    response = client.post(ATTESTATION, headers={**bearer(token), **agent.headers})
    assert response.status_code == 200, response.text


def link_directly(app: FastAPI, account_id: str, issuer: str, subject: str) -> None:
    with app.state.context.db.writer() as session:
        identities.link(session, issuer, subject, account_id, now=clock.now())
        session.commit()


def listed(client: TestClient, headers: dict[str, str]) -> list[dict]:
    response = client.get(IDENTITIES, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["identities"]


def reaches(client: TestClient, headers: dict[str, str]) -> int:
    return client.get("/v1/account", headers=headers).status_code


def oauth_reaches(client: TestClient, token: str) -> int:
    return client.post(ATTESTATION, headers=bearer(token)).status_code


def test_the_list_shows_every_link_with_its_kind(app, client, session_token, oauth_token):
    agent = register(client)
    wallet = Account.create().address.lower()
    session = link_session(client, agent, session_token("operator-1"))
    clock.advance(timedelta(seconds=1))
    link_oauth(client, agent, oauth_token("agent-7"))
    clock.advance(timedelta(seconds=1))
    link_directly(app, agent.account_id, WALLET_ISSUER, wallet)
    clock.advance(timedelta(seconds=1))
    link_directly(app, agent.account_id, "https://retired-idp.test/", "operator-0")

    shown = listed(client, agent.headers)
    assert [(i["kind"], i["issuer"], i["subject"]) for i in shown] == [
        ("session", ISSUER, "operator-1"),
        ("oauth", OAUTH_ISSUER, "agent-7"),
        ("wallet", WALLET_ISSUER, wallet),
        # An issuer no setting names shows as a session link.
        ("session", "https://retired-idp.test/", "operator-0"),
    ]
    assert all(set(i) == {"id", "kind", "issuer", "subject", "linked_at"} for i in shown)
    assert len({i["id"] for i in shown}) == 4
    assert shown[0]["linked_at"] < shown[1]["linked_at"] < shown[2]["linked_at"]
    # The session sees the same list; another account sees none of it.
    assert listed(client, session) == shown
    assert listed(client, register(client).headers) == []


def test_a_removed_link_no_longer_reaches_the_account(client, session_token):
    agent = register(client)
    mine = link_session(client, agent, session_token("operator-1"))
    intruder = link_session(client, agent, session_token("someone-with-the-leaked-key"))
    by_subject = {i["subject"]: i["id"] for i in listed(client, agent.headers)}

    gone = client.delete(f"{IDENTITIES}/{by_subject['someone-with-the-leaked-key']}", headers=mine)
    assert gone.status_code == 204 and gone.content == b""
    assert_problem(client.get("/v1/account", headers=intruder), 401, "unauthorized")
    assert reaches(client, mine) == 200
    # Removing it again: nothing there any more.
    again = client.delete(
        f"{IDENTITIES}/{by_subject['someone-with-the-leaked-key']}", headers=agent.headers
    )
    assert_problem(again, 404, "not_found")

    # A session may remove its own link; that call is its last.
    own = client.delete(f"{IDENTITIES}/{by_subject['operator-1']}", headers=mine)
    assert own.status_code == 204
    assert_problem(client.get(IDENTITIES, headers=mine), 401, "unauthorized")
    assert listed(client, agent.headers) == []


def test_another_accounts_link_is_not_found(app, client, session_token):
    agent, other = register(client), register(client)
    mine = link_session(client, agent, session_token("operator-1"))
    theirs = link_session(client, other, session_token("operator-2"))
    their_link = listed(client, other.headers)[0]["id"]

    for headers in (agent.headers, mine):
        assert_problem(
            client.delete(f"{IDENTITIES}/{their_link}", headers=headers), 404, "not_found"
        )
    for unknown in ("00000000-0000-4000-8000-000000000000", "not-an-id"):
        assert_problem(client.delete(f"{IDENTITIES}/{unknown}", headers=mine), 404, "not_found")
    assert reaches(client, theirs) == 200
    assert [i["id"] for i in listed(client, other.headers)] == [their_link]


def test_the_routes_take_the_key_or_a_session_only(client, session_token, oauth_token):
    agent = register(client)
    link_oauth(client, agent, oauth_token())
    link_id = listed(client, agent.headers)[0]["id"]
    for headers in ({}, {"x-api-key": "ab_live_" + "0" * 32}, bearer(oauth_token())):
        assert_problem(client.get(IDENTITIES, headers=headers), 401, "unauthorized")
        assert_problem(
            client.delete(f"{IDENTITIES}/{link_id}", headers=headers), 401, "unauthorized"
        )
    assert len(listed(client, agent.headers)) == 1


def test_a_rotation_made_with_the_key_drops_every_session_and_oauth_link(
    app, client, session_token, oauth_token
):
    agent = register(client)
    owner = link_session(client, agent, session_token("operator-1"))
    intruder = link_session(client, agent, session_token("someone-with-the-leaked-key"))
    link_oauth(client, agent, oauth_token("agent-7"))
    wallet = Account.create().address.lower()
    link_directly(app, agent.account_id, WALLET_ISSUER, wallet)
    assert oauth_reaches(client, oauth_token("agent-7")) == 200

    rotated = client.post("/dashboard/keys/rotate", headers=agent.headers)
    assert rotated.status_code == 200, rotated.text
    new = {"x-api-key": rotated.json()["api_key"]}

    for session in (owner, intruder):
        assert_problem(client.get("/v1/account", headers=session), 401, "unauthorized")
    assert_problem(
        client.post(ATTESTATION, headers=bearer(oauth_token("agent-7"))), 401, "unauthorized"
    )
    # The wallet link stays; the leaked key cannot link anything again.
    assert [(i["kind"], i["subject"]) for i in listed(client, new)] == [("wallet", wallet)]
    assert_problem(
        client.get("/v1/account", headers={**intruder, **agent.headers}), 401, "unauthorized"
    )
    # The owner links their session again with the new key.
    assert reaches(client, {**owner, **new}) == 200
    assert reaches(client, owner) == 200


def test_a_rotation_made_with_a_session_keeps_that_session_alone(
    app, client, session_token, oauth_token
):
    agent = register(client)
    owner = link_session(client, agent, session_token("operator-1"))
    other = link_session(client, agent, session_token("operator-2"))
    link_oauth(client, agent, oauth_token("agent-7"))
    wallet = Account.create().address.lower()
    link_directly(app, agent.account_id, WALLET_ISSUER, wallet)
    bystander = register(client)
    theirs = link_session(client, bystander, session_token("operator-3"))

    rotated = client.post("/dashboard/keys/rotate", headers=owner)
    assert rotated.status_code == 200, rotated.text

    assert reaches(client, owner) == 200
    assert_problem(client.get("/v1/account", headers=other), 401, "unauthorized")
    assert_problem(
        client.post(ATTESTATION, headers=bearer(oauth_token("agent-7"))), 401, "unauthorized"
    )
    assert [(i["kind"], i["subject"]) for i in listed(client, owner)] == [
        ("session", "operator-1"),
        ("wallet", wallet),
    ]
    # Another account's links are untouched.
    assert reaches(client, theirs) == 200


def test_the_kind_follows_the_configured_issuers():
    both = Settings(
        idp_issuer=ISSUER,
        idp_audience="a",
        idp_jwks_url="file:///k",
        oauth_issuer=OAUTH_ISSUER,
        oauth_audience="b",
        oauth_jwks_url="file:///k",
    )
    assert identities.kind_of(both, ISSUER) == "session"
    assert identities.kind_of(both, OAUTH_ISSUER) == "oauth"
    assert identities.kind_of(both, WALLET_ISSUER) == "wallet"
    assert identities.kind_of(both, "https://elsewhere.test/") == "session"
    # One provider for both: its links serve sessions too, and show as such.
    shared = both.model_copy(update={"oauth_issuer": ISSUER})
    assert identities.kind_of(shared, ISSUER) == "session"
    assert identities.kind_of(Settings(), OAUTH_ISSUER) == "session"  # OAuth off
