"""`account.identity_linked`: every new identity link is announced to its account, in the
link's own transaction, so an API key's holder learns when someone else linked a session
or an OAuth token with it. Links made by the authentication seam, by the operator's
`admin link-identity` and by a wallet's first x402 payment are each announced once; a
call that finds the identity linked already announces nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from eth_account import Account
from fastapi import FastAPI
from sqlalchemy import select
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.accounts import identities
from agent_broker.accounts.identities import WALLET_ISSUER
from agent_broker.cli import app as cli
from agent_broker.webhooks import service as webhooks
from agent_broker.webhooks.models import WebhookEvent
from tests.support.accounts import register
from tests.support.identity import ATTESTATION, ISSUER, bearer, idp_settings, oauth_settings
from tests.support.settings import TEST_SECRET
from tests.support.webhooks import accept, deliver, deliveries, set_endpoint
from tests.support.x402 import v1_payment
from tests.support.x402_wallet import Wallet

LINKED = "account.identity_linked"


@pytest.fixture
def app(make_domain_app: Callable[..., FastAPI], jwks_path) -> FastAPI:
    url = f"file://{jwks_path}"
    return make_domain_app(**idp_settings(url), **oauth_settings(url))


def _events_of(app: FastAPI, event_type: str) -> list[WebhookEvent]:
    with app.state.context.db.reader() as session:
        return list(session.scalars(select(WebhookEvent).where(WebhookEvent.type == event_type)))


def test_every_new_link_is_announced_once(
    app,
    client,
    challenge_server,
    database_url,
    monkeypatch,
    session_token,
    oauth_token,
):
    accept(challenge_server)
    agent = register(client)
    secret = set_endpoint(client, agent)
    session = bearer(session_token("operator-1"))
    for _ in range(2):  # the second call finds the link made
        assert client.get("/v1/account", headers={**session, **agent.headers}).status_code == 200
    for _ in range(2):
        token = bearer(oauth_token("agent-7"))
        assert client.post(ATTESTATION, headers={**token, **agent.headers}).status_code == 200
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    monkeypatch.setenv("BROKER_KEY_HASH_SECRET", TEST_SECRET)
    command = ["admin", "link-identity", agent.account_id, "--issuer", ISSUER]
    for _ in range(2):
        linked = CliRunner().invoke(cli, [*command, "--subject", "operator-9"])
        assert linked.exit_code == 0, linked.output
    wallet = Account.create().address.lower()
    for _ in range(2):  # as x402 settlement links a paying wallet
        with app.state.context.db.writer() as db:
            identities.link(db, WALLET_ISSUER, wallet, agent.account_id, now=clock.now())
            db.commit()
    # An identity linked to another account tells this one nothing.
    other = register(client)
    other_session = bearer(session_token("operator-2"))
    assert client.get("/v1/account", headers={**other_session, **other.headers}).status_code == 200

    assert len(_events_of(app, LINKED)) == 4
    assert deliver(app).startswith("delivered 4 webhook events")
    received = deliveries(challenge_server, secret)
    assert [event["type"] for event in received] == [LINKED] * 4
    listed = client.get("/dashboard/identities", headers=agent.headers).json()["identities"]
    # Each event says what the list says of the link it made, in the order they were made.
    assert [event["data"] for event in received] == listed
    assert [(i["kind"], i["subject"]) for i in listed] == [
        ("session", "operator-1"),
        ("oauth", "agent-7"),
        ("session", "operator-9"),
        ("wallet", wallet),
    ]


@pytest.fixture
def x402_app(make_domain_app, x402_settings) -> FastAPI:
    return make_domain_app(**x402_settings)


def test_a_wallet_s_first_payment_announces_its_link(x402_app, monkeypatch):
    """The account a first payment opens has no endpoint yet, so its event is written only
    where events are kept without one; the announcement itself is checked here."""
    from fastapi.testclient import TestClient

    announced: list[tuple[str, str, dict[str, Any]]] = []
    enqueue = webhooks.enqueue

    def spy(session, account_id, event_type, subject, data, *, now):  # type: ignore[no-untyped-def]
        announced.append((account_id, event_type, data))
        enqueue(session, account_id, event_type, subject, data, now=now)

    monkeypatch.setattr(webhooks, "enqueue", spy)
    wallet = Wallet()
    with TestClient(x402_app, raise_server_exceptions=False) as client:
        for _ in range(2):  # the second payment credits the same account, linked already
            paid = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, wallet)})
            assert paid.status_code == 200, paid.text
            if "new_account" in paid.json():
                opened = paid.json()["new_account"]
        (link,) = client.get(
            "/dashboard/identities", headers={"x-api-key": opened["api_key"]}
        ).json()["identities"]
    assert announced == [(opened["account_id"], LINKED, link)]
    assert link["kind"] == "wallet" and link["subject"] == wallet.address.lower()
