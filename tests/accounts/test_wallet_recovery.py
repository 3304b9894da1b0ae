"""Wallet key recovery (agent_broker/payments/x402/wallet.py): the wallet an account's x402
payments come from signs the service's EIP-4361 Sign-In with Ethereum message and gets the
account a new key. The message must be the one issued here (domain, URI, chain, nonce),
unexpired, unused and signed by its address; the nonce burns with the rotation, so of two
recoveries with one message exactly one succeeds. The routes need no key and are rate
limited per source address and per wallet."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.accounts import identities
from agent_broker.accounts.identities import WALLET_ISSUER
from agent_broker.accounts.models import WalletChallenge
from agent_broker.payments.x402 import wallet
from agent_broker.pricing import PACK_MICRO
from tests.support.accounts import register
from tests.support.http import assert_problem, serving
from tests.support.identity import ATTESTATION, bearer, idp_settings, oauth_settings
from tests.support.x402 import NETWORK, v1_payment
from tests.support.x402_wallet import Wallet

CHALLENGE = "/v1/account/wallet/challenge"
RECOVER = "/v1/account/wallet/recover"


@pytest.fixture
def app(make_app: Callable[..., FastAPI], x402_settings, jwks_path) -> FastAPI:
    url = f"file://{jwks_path}"
    return make_app(**x402_settings, **idp_settings(url), **oauth_settings(url))


def linked_wallet(app: FastAPI, account_id: str) -> LocalAccount:
    """A new wallet linked to the account, as its first x402 payment would link it."""
    holder = Account.create()
    with app.state.context.db.writer() as session:
        identities.link(session, WALLET_ISSUER, holder.address.lower(), account_id, now=clock.now())
        session.commit()
    return holder


def challenge(client: TestClient, address: str) -> dict[str, Any]:
    response = client.post(CHALLENGE, json={"address": address})
    assert response.status_code == 200, response.text
    return response.json()


def signed(holder: LocalAccount, message: str) -> str:
    return "0x" + bytes(holder.sign_message(encode_defunct(text=message)).signature).hex()


def recover(client: TestClient, message: str, signature: str) -> httpx.Response:
    return client.post(RECOVER, json={"message": message, "signature": signature})


def refused(response: httpx.Response, check: str) -> str:
    body = assert_problem(response, 400, "invalid_input")
    assert body["check"] == check, body
    return body["detail"]


def recovered(client: TestClient, holder: LocalAccount) -> dict[str, Any]:
    message = challenge(client, holder.address)["message"]
    response = recover(client, message, signed(holder, message))
    assert response.status_code == 200, response.text
    return response.json()


def test_a_wallet_that_paid_recovers_its_account_key(client):
    holder = Wallet()
    paid = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, holder)})
    assert paid.status_code == 200, paid.text
    opened = paid.json()["new_account"]
    lost = {"x-api-key": opened["api_key"]}

    body = recovered(client, holder.account)
    assert set(body) == {"account_id", "api_key"}
    assert body["account_id"] == opened["account_id"]
    assert body["api_key"].startswith("ab_live_") and body["api_key"] != opened["api_key"]
    assert_problem(client.get("/v1/account", headers=lost), 401, "unauthorized")
    account = client.get("/v1/account", headers={"x-api-key": body["api_key"]})
    assert account.status_code == 200, account.text
    assert account.json()["account_id"] == opened["account_id"]
    assert account.json()["balance_micro"] == 10 * PACK_MICRO
    # The wallet keeps paying for the same account, its key unchanged.
    again = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, holder)})
    assert again.status_code == 200 and "new_account" not in again.json()
    assert client.get("/v1/account", headers={"x-api-key": body["api_key"]}).status_code == 200


def test_the_challenge_is_a_sign_in_with_ethereum_message_for_this_deployment(client):
    holder = Account.create()
    now = clock.now().replace(microsecond=0)
    answer = challenge(client, holder.address.lower())
    text = answer["message"]
    lines = text.split("\n")
    assert lines[:3] == [
        "broker.test wants you to sign in with your Ethereum account:",
        holder.address,  # in its EIP-55 form, whatever case was asked
        "",
    ]
    assert "recover" in lines[3].lower() and "API key" in lines[3] and lines[4] == ""
    message = wallet.parse(text)
    assert (message.uri, message.version, message.chain_id) == ("https://broker.test", "1", 84532)
    assert len(message.nonce) == 32
    assert now <= message.issued_at <= now + timedelta(seconds=2)
    assert message.expiration_time == message.issued_at + timedelta(minutes=10)
    assert answer["expires_at"] == clock.rfc3339(message.expiration_time)
    assert message.text() == text
    # Each challenge has its own nonce.
    assert wallet.parse(challenge(client, holder.address)["message"]).nonce != message.nonce


def test_the_chain_is_the_configured_x402_network(make_app):
    with TestClient(make_app(), raise_server_exceptions=False) as client:
        text = challenge(client, Account.create().address)["message"]
    assert wallet.parse(text).chain_id == 8453  # base, the default
    assert NETWORK == "base-sepolia"  # the other tests' deployment: 84532


def test_the_recovery_signs_out_sessions_and_oauth_tokens_and_reactivates(
    client,
    session_token,
    oauth_token,
):
    agent = register(client)
    holder = linked_wallet(client.app, agent.account_id)
    session = bearer(session_token("someone-with-the-leaked-key"))
    assert client.get("/v1/account", headers={**session, **agent.headers}).status_code == 200
    token = bearer(oauth_token("agent-7"))
    assert client.post(ATTESTATION, headers={**token, **agent.headers}).status_code == 200
    assert client.post("/dashboard/keys", headers=agent.headers).json() == {"ok": True}

    body = recovered(client, holder)
    new = {"x-api-key": body["api_key"]}
    assert client.get("/v1/account", headers=new).json()["status"] == "active"
    assert_problem(client.get("/v1/account", headers=session), 401, "unauthorized")
    assert_problem(
        client.post(ATTESTATION, headers=bearer(oauth_token("agent-7"))), 401, "unauthorized"
    )
    links = client.get("/dashboard/identities", headers=new).json()["identities"]
    assert [(i["kind"], i["subject"]) for i in links] == [("wallet", holder.address.lower())]


def test_a_message_is_good_for_one_recovery(client):
    agent = register(client)
    holder = linked_wallet(client.app, agent.account_id)
    message = challenge(client, holder.address)["message"]
    signature = signed(holder, message)
    first = recover(client, message, signature)
    assert first.status_code == 200, first.text
    assert "already used" in refused(recover(client, message, signature), "used")
    # The key the first recovery gave still works: the refused one changed nothing.
    assert (
        client.get("/v1/account", headers={"x-api-key": first.json()["api_key"]}).status_code == 200
    )


def test_an_expired_message_is_refused(client):
    agent = register(client)
    holder = linked_wallet(client.app, agent.account_id)
    message = challenge(client, holder.address)["message"]
    expires = wallet.parse(message).expiration_time
    assert expires is not None
    clock.advance(expires - clock.now())  # ten minutes on: the expiration time is past
    assert "expired" in refused(recover(client, message, signed(holder, message)), "expired")
    clock.advance(timedelta(seconds=-2))  # just before it: still good
    assert recover(client, message, signed(holder, message)).status_code == 200


def test_a_signature_by_another_wallet_is_refused(client):
    agent = register(client)
    holder = linked_wallet(client.app, agent.account_id)
    message = challenge(client, holder.address)["message"]
    thief = linked_wallet(client.app, register(client).account_id)
    for signature in (
        signed(thief, message),
        signed(holder, message + " "),  # the holder, but another text
        "0x" + "00" * 65,
        "0x1234",
        "not hex at all",
    ):
        refused(recover(client, message, signature), "signature")
    # None of them used the message up.
    assert recover(client, message, signed(holder, message)).status_code == 200


def _altered(message: str, **changes: Any) -> str:
    return replace(wallet.parse(message), **changes).text()


def test_a_message_not_issued_here_is_refused(client):
    agent = register(client)
    holder = linked_wallet(client.app, agent.account_id)
    message = challenge(client, holder.address)["message"]
    later = clock.now() + timedelta(minutes=5)
    for changes, check in (
        ({"domain": "evil.test"}, "domain"),
        ({"domain": "broker.test", "scheme": "http"}, "domain"),
        ({"uri": "https://evil.test"}, "uri"),
        ({"chain_id": 8453}, "chain"),
        ({"version": "2"}, "version"),
        ({"nonce": "0123456789abcdef0123456789abcdef"}, "nonce"),
        ({"statement": "Sign in."}, "nonce"),  # the nonce, with another text
        ({"expiration_time": later}, "nonce"),
        ({"expiration_time": None}, "nonce"),
    ):
        forged = _altered(message, **changes)
        refused(recover(client, forged, signed(holder, forged)), check)
    assert recover(client, message, signed(holder, message)).status_code == 200


@pytest.mark.parametrize(
    "garble",
    [
        lambda valid, address: "",
        lambda valid, address: "hello",
        lambda valid, address: valid.replace("\n", "\r\n"),
        lambda valid, address: valid + "\nResources:\n- https://broker.test\ntrailing",
        lambda valid, address: valid.replace("\n\n", "\n", 1),
        lambda valid, address: valid.replace(address, address.lower()),
        lambda valid, address: valid.replace("Version: 1\nChain ID", "Chain ID"),
        lambda valid, address: valid.replace("Nonce: ", "Nonce: -"),
        lambda valid, address: valid.replace("Issued At: ", "Issued At: yesterday "),
        lambda valid, address: valid + "\n",
    ],
    ids=[
        "empty",
        "prose",
        "crlf",
        "trailing",
        "no-blank-line",
        "address-case",
        "field-missing",
        "bad-nonce",
        "bad-time",
        "final-lf",
    ],
)
def test_text_that_is_not_an_eip_4361_message_is_refused(client, garble):
    holder = Account.create()
    text = garble(challenge(client, holder.address)["message"], holder.address)
    refused(recover(client, text, signed(holder, text)), "message")


def test_the_parser_reads_every_optional_field():
    now = datetime(2026, 5, 1, 12, 0, 0, tzinfo=clock.now().tzinfo)
    full = wallet.SignInMessage(
        domain="broker.test:8443",
        address=Account.create().address,
        statement=None,
        uri="https://broker.test:8443",
        version="1",
        chain_id=1,
        nonce="abcdefgh",
        issued_at=now,
        expiration_time=now + timedelta(minutes=1),
        not_before=now,
        request_id="r-1",
        resources=("https://broker.test/a", "ipfs://b"),
        scheme="https",
    )
    assert wallet.parse(full.text()) == full
    bare = replace(full, expiration_time=None, not_before=None, request_id=None, resources=())
    assert wallet.parse(bare.text()) == bare
    assert "\n\n\nURI:" in bare.text()  # no statement: two empty lines


def test_an_unknown_wallet_is_not_found_once_it_signs(client):
    stranger = Account.create()
    message = challenge(client, stranger.address)["message"]  # issued for any address
    refused(recover(client, message, signed(Account.create(), message)), "signature")
    assert_problem(recover(client, message, signed(stranger, message)), 404, "not_found")


def test_a_bad_address_is_refused(client):
    checksummed = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"  # EIP-55's own example
    for good in (checksummed, checksummed.lower(), "0x" + checksummed[2:].upper()):
        challenge(client, good)
    mangled = "0x" + checksummed[2:].swapcase()  # mixed case, but not the checksum's
    for bad in ("", "0x123", "1x" + "0" * 40, "0x" + "g" * 40, mangled, checksummed + "00"):
        assert_problem(client.post(CHALLENGE, json={"address": bad}), 400, "invalid_input")
    assert_problem(client.post(CHALLENGE, json={}), 400, "invalid_input")
    assert_problem(client.post(RECOVER, json={"message": "x"}), 400, "invalid_input")


def _stored(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(WalletChallenge)) or 0


def test_expired_challenges_are_forgotten(app, client):
    for _ in range(3):
        challenge(client, Account.create().address)
    assert _stored(app) == 3
    clock.advance(timedelta(minutes=11))
    challenge(client, Account.create().address)
    assert _stored(app) == 1


@pytest.fixture
def limited_app(make_app, x402_settings):
    return make_app(
        **x402_settings, wallet_recovery_rate_limit="2/hour", trusted_proxies="127.0.0.1"
    )


def test_the_routes_are_rate_limited_per_source_and_per_wallet(limited_app):
    with TestClient(
        limited_app, raise_server_exceptions=False, client=("127.0.0.1", 50000)
    ) as client:
        agent = register(client)
        holder = linked_wallet(limited_app, agent.account_id)

        def source(n: int) -> dict[str, str]:
            return {"X-Forwarded-For": f"203.0.113.{n}"}

        def ask(n: int) -> httpx.Response:
            return client.post(CHALLENGE, json={"address": holder.address}, headers=source(n))

        messages = [ask(1).json()["message"], ask(1).json()["message"]]
        limited = assert_problem(ask(1), 429, "rate_limited")
        assert int(ask(1).headers["Retry-After"]) > 0 and limited["retryAfterSeconds"] > 0
        messages.append(ask(2).json()["message"])  # another source has its own budget

        def send(n: int, message: str, signature: str | None = None) -> httpx.Response:
            body = {"message": message, "signature": signature or signed(holder, message)}
            return client.post(RECOVER, json=body, headers=source(n))

        # Per source: bad recoveries count too.
        assert send(3, messages[0], "0x00").status_code == 400
        assert send(3, messages[0], "0x00").status_code == 400
        assert_problem(send(3, messages[0]), 429, "rate_limited")
        # Per wallet: from three sources, the wallet's third recovery is refused.
        assert send(4, messages[0]).status_code == 200
        assert send(5, messages[1]).status_code == 200
        assert_problem(send(6, messages[2]), 429, "rate_limited")


@pytest.fixture
def racing_app(make_app, x402_settings):
    # On PostgreSQL, several write transactions of one worker at once (SQLite has one).
    return make_app(**x402_settings, db_dispatch="threads")


def test_two_recoveries_racing_with_one_message_make_one_key(racing_app):
    app = racing_app
    with TestClient(app, raise_server_exceptions=False) as setup:
        agent = register(setup)
    holder = linked_wallet(app, agent.account_id)
    racers = 4
    with serving(app) as (live_server, _), httpx.Client(base_url=live_server, timeout=30) as http:
        message = http.post(CHALLENGE, json={"address": holder.address}).json()["message"]
        body = {"message": message, "signature": signed(holder, message)}
        start = threading.Barrier(racers)
        answers: list[httpx.Response] = []

        def race() -> None:
            start.wait()
            answers.append(http.post(RECOVER, json=body))

        threads = [threading.Thread(target=race) for _ in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(a.status_code for a in answers) == [200] + [400] * (racers - 1)
        winner = next(a for a in answers if a.status_code == 200).json()
        for loser in (a for a in answers if a.status_code == 400):
            assert loser.json()["check"] == "used"
        account = http.get("/v1/account", headers={"x-api-key": winner["api_key"]})
        assert account.status_code == 200 and account.json()["account_id"] == agent.account_id
        assert http.get("/v1/account", headers=agent.headers).status_code == 401
