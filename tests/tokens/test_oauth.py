"""Agent OAuth access tokens (docs/interface.md §2.3, §13.2): RS256 JWTs from the
configured issuer, scopes `read` and `account:write`, accepted on the attestation and on
finalize only; the identity link decides the account; finalize spends the token's jti."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.support.accounts import Agent, register
from tests.support.http import assert_problem, new_key
from tests.support.identity import (
    ATTESTATION,
    OAUTH_ISSUER,
    bearer,
    claims,
    idp_settings,
    oauth_settings,
    sign,
)
from tests.support.market import offer, open_thread

PROOF = {"nonce": "0123456789abcdef0123456789abcdef", "audience": "https://rp.agents.dev"}


@pytest.fixture
def app(make_app: Callable[..., FastAPI], jwks_path) -> FastAPI:
    url = f"file://{jwks_path}"
    return make_app(**idp_settings(url), **oauth_settings(url))


def link(client: TestClient, agent: Agent, token: str) -> None:
    response = client.post(ATTESTATION, headers={**bearer(token), **agent.headers})
    assert response.status_code == 200, response.text


def test_an_unlinked_token_reaches_nothing_and_one_call_with_the_key_links_it(client, oauth_token):
    agent = register(client)
    token = oauth_token()
    assert_problem(client.post(ATTESTATION, headers=bearer(token)), 401, "unauthorized")
    link(client, agent, token)
    minted = client.post(ATTESTATION, headers=bearer(oauth_token()))
    assert minted.status_code == 200
    me = client.get("/v1/account", headers=agent.headers).json()
    assert minted.json()["handle"] == me["handle"]


def test_a_read_token_mints_statements_but_not_proofs(client, oauth_token):
    agent = register(client)
    link(client, agent, oauth_token())
    assert client.post(ATTESTATION, headers=bearer(oauth_token())).status_code == 200
    refused = client.post(ATTESTATION, headers=bearer(oauth_token()), json=PROOF)
    assert_problem(refused, 403, "forbidden")
    both = oauth_token(scope="read account:write")
    assert client.post(ATTESTATION, headers=bearer(both), json=PROOF).status_code == 200


def test_an_account_write_only_token_mints_nothing(client, oauth_token):
    agent = register(client)
    link(client, agent, oauth_token())
    write_only = oauth_token(scope="account:write")
    assert_problem(client.post(ATTESTATION, headers=bearer(write_only)), 403, "forbidden")
    assert_problem(
        client.post(ATTESTATION, headers=bearer(write_only), json=PROOF), 403, "forbidden"
    )
    assert_problem(
        client.post(ATTESTATION, headers=bearer(oauth_token(scope=None))), 403, "forbidden"
    )


def test_oauth_tokens_are_refused_where_the_interface_does_not_allow_them(client, oauth_token):
    agent = register(client)
    link(client, agent, oauth_token())
    token = bearer(oauth_token(scope="read account:write"))
    for method, path in (("GET", "/v1/feed"), ("GET", "/v1/listings/mine")):
        assert_problem(client.request(method, path, headers=token), 401, "unauthorized")
    # Not a dashboard session: it cannot buy credits or manage keys.
    assert_problem(
        client.post("/dashboard/credits", headers=token, json={"pack_count": 1}),
        401,
        "unauthorized",
    )
    assert_problem(client.post("/dashboard/keys/rotate", headers=token), 401, "unauthorized")
    assert_problem(client.get("/v1/account", headers=token), 401, "unauthorized")


def test_a_session_is_not_an_oauth_token_and_the_reverse(client, oauth_token, idp_key):
    agent = register(client)
    session = sign(claims("operator-1"), idp_key)
    # A dashboard session on the attestation (an OAuth route) is checked as an OAuth token.
    assert_problem(
        client.post(ATTESTATION, headers={**bearer(session), **agent.headers}),
        401,
        "unauthorized",
    )


def test_tokens_without_jti_or_from_another_issuer_are_refused(client, oauth_token):
    agent = register(client)
    link(client, agent, oauth_token())
    for token in (
        oauth_token(jti=None),
        oauth_token(iss="https://other.agents.test/"),
        oauth_token(aud="someone-else"),
        oauth_token(jti="x" * 201),
    ):
        assert_problem(client.post(ATTESTATION, headers=bearer(token)), 401, "unauthorized")


def test_a_disabled_account_refuses_its_oauth_tokens(client, oauth_token):
    agent = register(client)
    link(client, agent, oauth_token())
    assert client.post("/dashboard/keys", headers=agent.headers).json() == {"ok": True}
    assert_problem(client.post(ATTESTATION, headers=bearer(oauth_token())), 403, "api_key_disabled")


def _negotiated(client, market) -> str:
    thread = open_thread(client, market.opener, market.listing_id)
    assert thread.status_code == 201, thread.text
    thread_id = thread.json()["id"]
    assert offer(client, market.poster, thread_id, "3 days").status_code == 200
    assert offer(client, market.opener, thread_id, "agreed, 3 days").status_code == 200
    return thread_id


def test_finalize_with_an_oauth_token_spends_it_once(client, market, oauth_token):
    token = oauth_token("poster-agent")
    link(client, market.poster, oauth_token("poster-agent"))
    thread_id = _negotiated(client, market)
    finalize = f"/v1/threads/{thread_id}/finalize"
    key = new_key()
    sealed = client.post(finalize, headers={**bearer(token), "Idempotency-Key": key})
    assert sealed.status_code == 201, sealed.text
    # The same key replays the first seal, token and all.
    replay = client.post(finalize, headers={**bearer(token), "Idempotency-Key": key})
    assert (replay.status_code, replay.json()["id"]) == (201, sealed.json()["id"])
    # Another call with the spent token is refused before anything else.
    assert_problem(
        client.post(finalize, headers={**bearer(token), "Idempotency-Key": new_key()}),
        409,
        "oauth_token_replay",
    )


def test_a_refused_finalize_leaves_the_token_unspent(client, market, oauth_token):
    token = oauth_token("poster-agent")
    link(client, market.poster, oauth_token("poster-agent"))
    thread_id = _negotiated(client, market)
    # Refused inside the operation, after the token was spent: the rollback unspends it.
    refused = client.post(
        "/v1/threads/00000000-0000-0000-0000-000000000000/finalize",
        headers={**bearer(token), "Idempotency-Key": new_key()},
    )
    assert_problem(refused, 404, "not_found")
    sealed = client.post(
        f"/v1/threads/{thread_id}/finalize",
        headers={**bearer(token), "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201, sealed.text


def test_a_negotiator_token_cannot_finalize(client, market, oauth_token):
    link(client, market.opener, oauth_token("opener-agent"))
    thread_id = _negotiated(client, market)
    refused = client.post(
        f"/v1/threads/{thread_id}/finalize",
        headers={**bearer(oauth_token("opener-agent")), "Idempotency-Key": new_key()},
    )
    assert_problem(refused, 403, "forbidden")


def test_oauth_settings_come_all_together(make_app, jwks_path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="BROKER_OAUTH_ISSUER"):
        make_app(oauth_issuer=OAUTH_ISSUER)


def test_without_oauth_configured_a_token_is_401(make_app, oauth_token):
    with TestClient(make_app()) as client:
        agent = register(client)
        refused = client.post(ATTESTATION, headers={**bearer(oauth_token()), **agent.headers})
        assert_problem(refused, 401, "unauthorized")
        assert "not enabled" in refused.json()["detail"]


def test_spent_tokens_are_forgotten_once_expired(app, client, market, oauth_token):
    from datetime import timedelta

    from sqlalchemy import func, select

    from agent_broker import clock
    from agent_broker.accounts.identities import forget_expired_tokens
    from agent_broker.accounts.models import SpentToken

    link(client, market.poster, oauth_token("poster-agent"))
    thread_id = _negotiated(client, market)
    token = oauth_token("poster-agent")  # expires in 300 s
    sealed = client.post(
        f"/v1/threads/{thread_id}/finalize",
        headers={**bearer(token), "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201

    def spent() -> int:
        with app.state.context.db.reader() as session:
            return session.scalar(select(func.count()).select_from(SpentToken))

    def forget() -> int:
        with app.state.context.db.writer() as session:
            forgotten = forget_expired_tokens(session, now=clock.now())
            session.commit()
        return forgotten

    assert spent() == 1
    clock.advance(timedelta(minutes=5))  # expired, but within the kept margin
    assert forget() == 0 and spent() == 1
    clock.advance(timedelta(minutes=11))
    assert forget() == 1 and spent() == 0
