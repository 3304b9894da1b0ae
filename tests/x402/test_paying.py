"""Paying per call with x402, end to end: the challenge a payable call with no credential
answers, a wallet with no account paying for the feed and for a listing (signed by x402's
own client, verified and settled by a facilitator that checks the signature), the account
opened and its key returned once, receipts, later payments crediting the same account, the
manifest, the OpenAPI document, and payments switched off."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker.ledger.models import JournalEntry
from agent_broker.pricing import PACK_MICRO
from tests.support.accounts import balance, read_account, register
from tests.support.http import assert_problem, new_key
from tests.support.market import LISTING
from tests.support.settings import PUBLIC_BASE_URL as BASE
from tests.support.x402 import (
    CAIP2,
    NETWORK,
    PAY_TO,
    PAYABLE_OPERATIONS,
    USDC,
    challenge_of,
    count_accounts,
    new_account_key,
    receipt,
    v1_payment,
    v2_payment,
    x402_rows,
)
from tests.support.x402_wallet import Wallet, pay_v1

PAYABLE = sorted(PAYABLE_OPERATIONS)
SOME_ID = "0b4e7c1e-2f0a-4d8e-9a51-6f2d3c4b5a69"
TIERS = [("5000000", 10_000, True), ("50000000", 100_000, True), ("500000", 1_000, False)]


def _concrete(path: str) -> str:
    for name in ("{listing_id}", "{thread_id}", "{deal_id}"):
        path = path.replace(name, SOME_ID)
    return path


@pytest.mark.parametrize(("method", "path"), PAYABLE)
def test_a_payable_call_without_any_credential_is_offered_the_tiers(client, method, path):
    response = challenge_of(client, method, _concrete(path))
    body = response.json()
    assert response.headers["content-type"] == "application/problem+json"
    assert body["type"] == f"{BASE}/problems/insufficient_funds_self"
    assert body["title"] == "Insufficient credits"
    assert (body["status"], body["reason"]) == (402, "insufficient_funds_self")
    assert body["error"] == body["detail"]
    assert body["x402Version"] == 1
    assert (body["creditsRemaining"], body["creditsRequired"]) == (0, 1000)
    resource = BASE + _concrete(path)
    assert [
        (o["maxAmountRequired"], o["extra"]["credits"], o["extra"]["deal_capable"])
        for o in body["accepts"]
    ] == TIERS
    for offer in body["accepts"]:
        assert offer["scheme"] == "exact" and offer["network"] == NETWORK
        assert offer["asset"] == USDC["asset"] and offer["payTo"] == PAY_TO
        assert offer["resource"] == resource
        assert offer["mimeType"] == "application/json" and offer["maxTimeoutSeconds"] == 60
        assert (offer["extra"]["name"], offer["extra"]["version"]) == ("USDC", "2")
        assert offer["description"]
    v2 = json.loads(base64.b64decode(response.headers["PAYMENT-REQUIRED"]))
    assert v2["x402Version"] == 2 and v2["error"] == body["detail"]
    assert v2["resource"]["url"] == resource
    assert v2["resource"]["mimeType"] == "application/json" and v2["resource"]["serviceName"]
    assert v2["extensions"]["bazaar"]["info"]["input"]["method"] == method
    assert [(o["amount"], o["network"], o["payTo"]) for o in v2["accepts"]] == [
        (amount, CAIP2, PAY_TO) for amount, _, _ in TIERS
    ]
    assert all(o["asset"] == USDC["asset"] and o["maxTimeoutSeconds"] == 60 for o in v2["accepts"])


def test_a_presented_credential_that_is_refused_stays_401(client):
    assert_problem(
        client.get("/v1/feed", headers={"x-api-key": "ab_live_nope"}), 401, "unauthorized"
    )
    assert_problem(
        client.get("/v1/feed", headers={"Authorization": "Bearer nope"}), 401, "unauthorized"
    )
    # Only payable routes are offered a payment.
    assert_problem(client.get("/v1/account"), 401, "unauthorized")


def test_the_resource_keeps_the_query_and_ignores_the_host_header(client):
    response = client.get("/v1/feed?limit=5", headers={"Host": "evil.example"})
    assert response.status_code == 402
    assert response.json()["accepts"][0]["resource"] == f"{BASE}/v1/feed?limit=5"


def test_a_new_wallet_pays_for_the_feed_with_v2_and_gets_an_account(app, client, facilitator):
    wallet = Wallet()
    before = count_accounts(app)
    paid = client.get("/v1/feed", headers={"PAYMENT-SIGNATURE": v2_payment(client, wallet)})
    assert paid.status_code == 200, paid.text
    body = paid.json()
    assert body["listings"] == []
    opened = body["new_account"]
    assert opened["api_key"].startswith("ab_") and opened["notice"]
    assert count_accounts(app) == before + 1
    settled = receipt(paid)
    assert settled["success"] is True and settled["network"] == CAIP2
    assert settled["transaction"] == facilitator.settled[0]["transaction"]
    assert settled["payer"].lower() == wallet.address.lower()

    account = read_account(client, {"x-api-key": opened["api_key"]})
    assert account["account_id"] == opened["account_id"]
    assert account["handle"] == opened["handle"]
    assert account["balance_micro"] == 10 * PACK_MICRO
    assert account["reputation"]["funded"] is True
    with app.state.context.db.reader() as session:
        entry = session.scalars(
            select(JournalEntry).where(JournalEntry.kind == "x402_payment")
        ).one()
    assert entry.real_money is True
    assert entry.reference == x402_rows(app)[0].id
    assert x402_rows(app)[0].status == "settled"
    assert x402_rows(app)[0].transaction == settled["transaction"]


def test_a_new_wallet_pays_for_a_listing_with_v1_and_the_listing_is_posted(app, client):
    wallet = Wallet()
    challenge = challenge_of(client, "POST", "/v1/listings")
    payment = pay_v1(wallet, challenge.json()["accepts"][0])
    posted = client.post(
        "/v1/listings",
        json=LISTING,
        headers={"X-PAYMENT": payment, "Idempotency-Key": new_key()},
    )
    assert posted.status_code == 201, posted.text
    listing = posted.json()
    assert listing["title"] == LISTING["title"]
    key = listing["new_account"]["api_key"]
    assert receipt(posted)["success"] is True
    # The posting fee came out of what the payment bought.
    account = read_account(client, {"x-api-key": key})
    assert account["balance_micro"] == 10 * PACK_MICRO - 100_000
    mine = client.get("/v1/listings/mine", headers={"x-api-key": key}).json()
    assert [item["id"] for item in mine["listings"]] == [listing["id"]]


def test_the_key_is_returned_even_when_the_paid_call_is_refused(app, client):
    wallet = Wallet()
    refused = client.post(
        "/v1/listings",
        json={**LISTING, "price_micro": -1},
        headers={"X-PAYMENT": v1_payment(client, wallet), "Idempotency-Key": new_key()},
    )
    body = assert_problem(refused, 400, "invalid_input")
    key = body["new_account"]["api_key"]
    assert read_account(client, {"x-api-key": key})["balance_micro"] == 10 * PACK_MICRO


def test_a_replayed_idempotent_answer_never_carries_the_key_again(client):
    wallet = Wallet()
    idempotency = {"Idempotency-Key": new_key()}
    first = client.post(
        "/v1/listings",
        json=LISTING,
        headers={"X-PAYMENT": v1_payment(client, wallet), **idempotency},
    )
    assert first.status_code == 201, first.text
    key = first.json()["new_account"]["api_key"]
    again = client.post("/v1/listings", json=LISTING, headers={"x-api-key": key, **idempotency})
    assert again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert "new_account" not in again.json()
    assert "PAYMENT-RESPONSE" not in again.headers


def test_a_known_wallet_pays_again_into_the_same_account_without_a_new_key(app, client):
    wallet = Wallet()
    first = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, wallet, tier=2)})
    key = first.json()["new_account"]["api_key"]
    accounts = count_accounts(app)
    second = client.get(
        "/v1/feed", headers={"PAYMENT-SIGNATURE": v2_payment(client, wallet, tier=1)}
    )
    assert second.status_code == 200, second.text
    assert "new_account" not in second.json()
    assert receipt(second)["success"] is True
    assert count_accounts(app) == accounts
    assert read_account(client, {"x-api-key": key})["balance_micro"] == (1 + 100) * PACK_MICRO


def test_x402s_default_client_pays_the_single_pack_within_its_spend_cap(client):
    from x402 import x402ClientSync
    from x402.http.utils import decode_payment_required_header, encode_payment_signature_header
    from x402.mechanisms.evm.exact.register import register_exact_evm_client

    wallet = Wallet()
    payer = register_exact_evm_client(x402ClientSync(), wallet.account)
    challenge = challenge_of(client, "GET", "/v1/feed")
    required = decode_payment_required_header(challenge.headers["PAYMENT-REQUIRED"])
    payment = encode_payment_signature_header(payer.create_payment_payload(required))
    paid = client.get("/v1/feed", headers={"PAYMENT-SIGNATURE": payment})
    assert paid.status_code == 200, paid.text
    assert balance(client, new_account_key(paid)) == PACK_MICRO


def test_an_authenticated_call_ignores_nothing_and_needs_no_payment(client):
    agent = register(client)
    assert client.get("/v1/feed", headers=agent.headers).status_code == 200


def test_the_manifest_lists_network_asset_tiers_and_the_twelve_endpoints(client):
    response = client.get("/.well-known/x402")
    assert response.status_code == 200
    manifest = response.json()
    assert manifest["x402Version"] == 1 and manifest["x402Versions"] == [1, 2]
    assert (manifest["network"], manifest["asset"], manifest["payTo"]) == (
        NETWORK,
        USDC["asset"],
        PAY_TO,
    )
    assert [
        (t["maxAmountRequired"], t["extra"]["credits"], t["extra"]["deal_capable"])
        for t in manifest["tiers"]
    ] == TIERS
    assert all("resource" not in tier for tier in manifest["tiers"])
    assert sorted((e["method"], e["path"]) for e in manifest["endpoints"]) == sorted(PAYABLE)
    for endpoint in manifest["endpoints"]:
        assert endpoint["summary"]
        if (endpoint["method"], endpoint["path"]) in {
            ("POST", "/v1/listings"),
            ("GET", "/v1/feed"),
        }:
            assert endpoint["entryPoint"] is True
            assert endpoint["url"] == BASE + endpoint["path"]
        else:
            assert endpoint["templated"] is True and "url" not in endpoint
    assert manifest["documentation"]["openapi"] == f"{BASE}/openapi.json"
    assert manifest["clientNotes"]["minAmountRequired"] == "500000"
    assert manifest["clientNotes"]["notes"]


def test_the_terms_url_reaches_the_manifest_and_each_offer(make_app, x402_settings):
    app = make_app(**x402_settings, terms_url="https://broker.test/terms")
    with TestClient(app) as client:
        assert client.get("/.well-known/x402").json()["termsUrl"] == "https://broker.test/terms"
        offers = challenge_of(client, "GET", "/v1/feed").json()["accepts"]
        assert {o["extra"]["termsUrl"] for o in offers} == {"https://broker.test/terms"}


def test_the_openapi_document_declares_the_challenge_on_the_payable_operations_only(client):
    document = client.get("/openapi.json").json()
    declared = {
        (method.upper(), path): operation["responses"]["402"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if "402" in operation.get("responses", {})
    }
    challenging = {
        op for op, answer in declared.items() if "PAYMENT-REQUIRED" in answer.get("headers", {})
    }
    assert challenging == set(PAYABLE)
    # Beside them only certification's subscribe can answer 402 (a short balance), and it
    # offers no payment.
    assert set(declared) - challenging == {("POST", "/v1/account/certification")}


def test_with_payments_off_payable_routes_answer_401_and_there_is_no_manifest(make_app):
    app = make_app()
    with TestClient(app) as client:
        assert_problem(client.get("/v1/feed"), 401, "unauthorized")
        payment = base64.b64encode(b'{"x402Version": 1}').decode()
        assert_problem(client.get("/v1/feed", headers={"X-PAYMENT": payment}), 401, "unauthorized")
        assert client.get("/.well-known/x402").status_code == 404
        document = client.get("/openapi.json").json()
        assert "402" not in document["paths"]["/v1/feed"]["get"]["responses"]


def test_settings_refuse_x402_without_a_facilitator_or_a_wallet(make_settings):
    with pytest.raises(ValueError, match="FACILITATOR_URL"):
        make_settings(x402_enabled=True, x402_pay_to=PAY_TO)
    with pytest.raises(ValueError, match="PAY_TO"):
        make_settings(x402_enabled=True, x402_facilitator_url="https://f.test", x402_pay_to="me")
    with pytest.raises(ValueError, match="ASSET_NAME"):
        make_settings(
            x402_enabled=True,
            x402_facilitator_url="https://f.test",
            x402_pay_to=PAY_TO,
            x402_asset="0x" + "11" * 20,
        )
