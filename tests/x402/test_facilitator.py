"""The local x402 facilitator and the test wallet on their own, over real HTTP: payments
made by x402's client code verify and settle (v1 and v2, through x402's
HTTPFacilitatorClient); each tampered payment is refused with x402's reason; a payment
settles once however many settles race; the knobs fail, stall and refuse as asked."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import httpx
import pytest
from x402.http.facilitator_client import FacilitatorConfig, HTTPFacilitatorClient
from x402.http.utils import decode_payment_signature_header, encode_payment_required_header
from x402.mechanisms.evm.constants import (
    ERR_AUTHORIZATION_VALUE_MISMATCH,
    ERR_INSUFFICIENT_BALANCE,
    ERR_INVALID_SIGNATURE,
    ERR_MISSING_EIP712_DOMAIN,
    ERR_NETWORK_MISMATCH,
    ERR_NONCE_ALREADY_USED,
    ERR_RECIPIENT_MISMATCH,
    ERR_TRANSACTION_FAILED,
    ERR_UNSUPPORTED_SCHEME,
    ERR_VALID_AFTER_FUTURE,
    ERR_VALID_BEFORE_EXPIRED,
)
from x402.mechanisms.evm.default_assets import DEFAULT_ASSETS
from x402.schemas import (
    PaymentRequired,
    PaymentRequirements,
    PaymentRequirementsV1,
    ResourceInfo,
    SettleResponse,
    VerifyResponse,
)

from tests.support.x402_facilitator import (
    INVALID_NETWORK,
    INVALID_PAYLOAD,
    INVALID_X402_VERSION,
    LocalFacilitator,
)
from tests.support.x402_wallet import (
    Wallet,
    decode_header,
    pay_v1,
    pay_v2,
    sign_authorization,
    v1_header,
    v2_header,
)

USDC = DEFAULT_ASSETS["eip155:84532"][0]  # Base Sepolia USDC
PAY_TO = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
OTHER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
AMOUNT = 1_500_000
RESOURCE = "https://broker.test/v1/credits/x402"
V1_NETWORK, V2_NETWORK = "base-sepolia", "eip155:84532"
TX_HASH = re.compile(r"0x[0-9a-f]{64}")


# --- helpers ---------------------------------------------------------------------------


def v1_accept(**changes: Any) -> dict[str, Any]:
    """A v1 offer as a 402 body's accepts[] carries it."""
    return {
        "scheme": "exact",
        "network": V1_NETWORK,
        "maxAmountRequired": str(AMOUNT),
        "resource": RESOURCE,
        "description": "Broker credits",
        "mimeType": "application/json",
        "payTo": PAY_TO,
        "maxTimeoutSeconds": 300,
        "asset": USDC["asset"],
        "extra": {"name": USDC["name"], "version": USDC["version"]},
    } | changes


def v2_requirements(**changes: Any) -> dict[str, Any]:
    """A v2 offer as a PAYMENT-REQUIRED header's accepts[] carries it."""
    return {
        "scheme": "exact",
        "network": V2_NETWORK,
        "asset": USDC["asset"],
        "amount": str(AMOUNT),
        "payTo": PAY_TO,
        "maxTimeoutSeconds": 300,
        "extra": {"name": USDC["name"], "version": USDC["version"]},
    } | changes


def request_body(header: str, requirements: dict[str, Any]) -> dict[str, Any]:
    """The /verify or /settle body for a payment header and the offer it pays."""
    payment = decode_header(header)
    return {
        "x402Version": payment["x402Version"],
        "paymentPayload": payment,
        "paymentRequirements": requirements,
    }


def signed(
    wallet: Wallet,
    version: int,
    *,
    valid_after_in: int = -60,
    valid_before_in: int = 300,
    **changes: Any,
) -> dict[str, Any]:
    """A hand-signed request body paying the default offer, with `changes` to what is
    signed (to, value, nonce, signer) and the validity window relative to now."""
    now = int(time.time())
    fields: dict[str, Any] = {
        "to": PAY_TO,
        "value": AMOUNT,
        "valid_after": now + valid_after_in,
        "valid_before": now + valid_before_in,
    } | changes
    network = V1_NETWORK if version == 1 else V2_NETWORK
    inner = sign_authorization(
        wallet,
        network=network,
        asset=USDC["asset"],
        name=USDC["name"],
        version=USDC["version"],
        **fields,
    )
    if version == 1:
        return request_body(v1_header(network, inner), v1_accept())
    return request_body(v2_header(v2_requirements(), inner), v2_requirements())


def call(facilitator: LocalFacilitator, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{facilitator.url}{path}", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def verify_and_settle(
    url: str, header: str, requirements: dict[str, Any], timeout: float = 10
) -> tuple[VerifyResponse, SettleResponse]:
    """Verify, then settle, a payment header through x402's HTTPFacilitatorClient."""
    payload = decode_payment_signature_header(header)
    model = PaymentRequirementsV1 if payload.x402_version == 1 else PaymentRequirements
    offer = model.model_validate(requirements)

    async def run() -> tuple[VerifyResponse, SettleResponse]:
        config = FacilitatorConfig(url=url, timeout=timeout)
        async with HTTPFacilitatorClient(config) as client:
            return await client.verify(payload, offer), await client.settle(payload, offer)

    return asyncio.run(run())


# --- payments made by x402's client code -----------------------------------------------


def test_x402_client_v1_payment_verifies_and_settles(facilitator: LocalFacilitator) -> None:
    wallet, accept = Wallet(), v1_accept()
    header = pay_v1(wallet, accept)

    payment = decode_header(header)
    assert {k: payment[k] for k in ("x402Version", "scheme", "network")} == {
        "x402Version": 1,
        "scheme": "exact",
        "network": V1_NETWORK,
    }
    authorization = payment["payload"]["authorization"]
    assert authorization["from"] == wallet.address
    assert authorization["value"] == str(AMOUNT)

    verified, settled = verify_and_settle(facilitator.url, header, accept)
    assert verified.is_valid, verified
    assert verified.payer == wallet.address
    assert settled.success, settled
    assert TX_HASH.fullmatch(settled.transaction)
    assert (settled.network, settled.payer, settled.amount) == (
        V1_NETWORK,
        wallet.address,
        str(AMOUNT),
    )
    assert [path for path, _ in facilitator.calls] == ["/verify", "/settle"]
    assert facilitator.calls[0][1] == {
        "x402Version": 1,
        "paymentPayload": payment,
        "paymentRequirements": accept,
    }
    assert [result["transaction"] for result in facilitator.settled] == [settled.transaction]
    assert len(facilitator.used_nonces) == 1


def test_x402_client_v2_payment_of_a_chosen_offer_verifies_and_settles(
    facilitator: LocalFacilitator,
) -> None:
    wallet = Wallet()
    offers = [v2_requirements(amount="1000000"), v2_requirements()]
    required = encode_payment_required_header(
        PaymentRequired(
            accepts=[PaymentRequirements.model_validate(offer) for offer in offers],
            resource=ResourceInfo(url=RESOURCE, description="Broker credits"),
        )
    )
    header = pay_v2(wallet, required, index=1)

    payment = decode_header(header)
    assert payment["x402Version"] == 2
    assert payment["accepted"] == offers[1]
    assert payment["resource"]["url"] == RESOURCE
    assert payment["payload"]["authorization"]["value"] == str(AMOUNT)

    verified, settled = verify_and_settle(facilitator.url, header, offers[1])
    assert verified.is_valid, verified
    assert settled.success, settled
    assert (settled.network, settled.payer, settled.amount) == (
        V2_NETWORK,
        wallet.address,
        str(AMOUNT),
    )
    assert facilitator.calls[1][1]["x402Version"] == 2


def test_supported_kinds_reach_x402s_client(facilitator: LocalFacilitator) -> None:
    supported = HTTPFacilitatorClient(FacilitatorConfig(url=facilitator.url)).get_supported()
    assert {(kind.x402_version, kind.scheme, kind.network) for kind in supported.kinds} == {
        (1, "exact", "base"),
        (1, "exact", "base-sepolia"),
        (2, "exact", "eip155:8453"),
        (2, "exact", "eip155:84532"),
    }
    assert supported.signers == {"eip155:*": [facilitator.address]}


# --- refusals --------------------------------------------------------------------------

TAMPERINGS = {
    "signed by another wallet": ({"signer": Wallet()}, ERR_INVALID_SIGNATURE),
    "pays someone else": ({"to": OTHER}, ERR_RECIPIENT_MISMATCH),
    "moves too little": ({"value": AMOUNT - 1}, ERR_AUTHORIZATION_VALUE_MISMATCH),
    "moves too much": ({"value": AMOUNT + 1}, ERR_AUTHORIZATION_VALUE_MISMATCH),
    "expires within the margin": ({"valid_before_in": 3}, ERR_VALID_BEFORE_EXPIRED),
    "expired": ({"valid_before_in": -10}, ERR_VALID_BEFORE_EXPIRED),
    "not yet valid": ({"valid_after_in": 60}, ERR_VALID_AFTER_FUTURE),
}


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_a_tampered_payment_is_refused_with_its_reason(
    facilitator: LocalFacilitator, tampering: str, version: int
) -> None:
    changes, reason = TAMPERINGS[tampering]
    wallet = Wallet()
    body = signed(wallet, version, **changes)

    verified = call(facilitator, "/verify", body)
    assert verified["isValid"] is False
    assert verified["invalidReason"] == reason, verified
    assert verified["payer"] == wallet.address
    settled = call(facilitator, "/settle", body)
    assert settled["success"] is False
    assert settled["errorReason"] == reason
    assert settled["transaction"] == ""
    assert settled["network"] == body["paymentRequirements"]["network"]
    assert facilitator.settled == [] and facilitator.used_nonces == set()


@pytest.mark.parametrize("version", [1, 2])
def test_a_nonce_settles_once(facilitator: LocalFacilitator, version: int) -> None:
    wallet = Wallet()
    body = signed(wallet, version)
    # Verifying spends nothing.
    assert call(facilitator, "/verify", body)["isValid"] is True
    assert call(facilitator, "/verify", body)["isValid"] is True
    assert call(facilitator, "/settle", body)["success"] is True

    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_NONCE_ALREADY_USED
    assert call(facilitator, "/settle", body)["errorReason"] == ERR_NONCE_ALREADY_USED
    nonce = body["paymentPayload"]["payload"]["authorization"]["nonce"]
    resigned = signed(wallet, version, nonce=nonce, valid_before_in=600)
    assert call(facilitator, "/verify", resigned)["invalidReason"] == ERR_NONCE_ALREADY_USED
    # Nonces are per payer: another wallet may use the same one.
    assert call(facilitator, "/verify", signed(Wallet(), version, nonce=nonce))["isValid"]
    assert len(facilitator.settled) == 1


@pytest.mark.parametrize("version", [1, 2])
def test_a_payment_on_another_network_is_refused(
    facilitator: LocalFacilitator, version: int
) -> None:
    wallet = Wallet()
    now = int(time.time())
    window = {"valid_after": now - 60, "valid_before": now + 300}
    network = "base" if version == 1 else "eip155:8453"
    inner = sign_authorization(
        wallet,
        network=network,
        asset=USDC["asset"],
        name=USDC["name"],
        version=USDC["version"],
        to=PAY_TO,
        value=AMOUNT,
        **window,
    )
    if version == 1:
        body = request_body(v1_header(network, inner), v1_accept())
    else:
        body = request_body(v2_header(v2_requirements(network=network), inner), v2_requirements())

    verified = call(facilitator, "/verify", body)
    assert verified["invalidReason"] == ERR_NETWORK_MISMATCH, verified
    assert call(facilitator, "/settle", body)["errorReason"] == ERR_NETWORK_MISMATCH


@pytest.mark.parametrize("version", [1, 2])
def test_another_scheme_is_refused(facilitator: LocalFacilitator, version: int) -> None:
    body = signed(Wallet(), version)
    if version == 1:
        body["paymentPayload"]["scheme"] = "upto"
    else:
        body["paymentPayload"]["accepted"]["scheme"] = "upto"
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_UNSUPPORTED_SCHEME

    offered_upto = signed(Wallet(), version)
    offered_upto["paymentRequirements"]["scheme"] = "upto"
    assert call(facilitator, "/verify", offered_upto)["invalidReason"] == ERR_UNSUPPORTED_SCHEME


def test_a_tracked_balance_must_cover_the_payment_and_is_debited(
    facilitator: LocalFacilitator,
) -> None:
    poor, funded, untracked = Wallet(), Wallet(), Wallet()
    facilitator.balances[poor.address.lower()] = AMOUNT - 1
    facilitator.balances[funded.address] = 2 * AMOUNT

    body = signed(poor, 2)
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_INSUFFICIENT_BALANCE
    assert call(facilitator, "/settle", body)["errorReason"] == ERR_INSUFFICIENT_BALANCE
    assert facilitator.balances[poor.address.lower()] == AMOUNT - 1

    assert call(facilitator, "/settle", signed(funded, 1))["success"] is True
    assert facilitator.balances[funded.address] == AMOUNT
    assert call(facilitator, "/settle", signed(funded, 2))["success"] is True
    assert facilitator.balances[funded.address] == 0
    assert call(facilitator, "/verify", signed(funded, 2))["invalidReason"] == (
        ERR_INSUFFICIENT_BALANCE
    )
    assert call(facilitator, "/settle", signed(untracked, 2))["success"] is True


def test_malformed_requests_are_refused(facilitator: LocalFacilitator) -> None:
    response = httpx.post(f"{facilitator.url}/verify", content=b"{not json", timeout=10)
    assert response.status_code == 400
    assert httpx.get(f"{facilitator.url}/nowhere", timeout=10).status_code == 404

    body = signed(Wallet(), 2)
    body["paymentPayload"]["payload"]["authorization"]["value"] = "1.5"
    assert call(facilitator, "/verify", body)["invalidReason"] == INVALID_PAYLOAD

    body = signed(Wallet(), 2)
    body["x402Version"] = 3
    assert call(facilitator, "/verify", body)["invalidReason"] == INVALID_X402_VERSION

    body = signed(Wallet(), 1)
    del body["paymentRequirements"]["extra"]
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_MISSING_EIP712_DOMAIN

    body = signed(Wallet(), 1)
    body["paymentPayload"]["network"] = body["paymentRequirements"]["network"] = "polygon"
    assert call(facilitator, "/verify", body)["invalidReason"] == INVALID_NETWORK

    body = signed(Wallet(), 1)
    body["paymentPayload"]["payload"]["signature"] = "0x1234"
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_INVALID_SIGNATURE
    assert facilitator.settled == []


# --- concurrency and knobs -------------------------------------------------------------


def test_concurrent_settles_of_one_payment_succeed_once(facilitator: LocalFacilitator) -> None:
    body = request_body(pay_v1(Wallet(), v1_accept()), v1_accept())
    racers = 10
    start = threading.Barrier(racers)
    answers: list[dict[str, Any]] = []

    def settle() -> None:
        with httpx.Client(timeout=30) as client:
            start.wait(timeout=30)
            answers.append(client.post(f"{facilitator.url}/settle", json=body).json())

    threads = [threading.Thread(target=settle) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert len(answers) == racers
    assert sum(answer["success"] for answer in answers) == 1
    assert {a["errorReason"] for a in answers if not a["success"]} == {ERR_NONCE_ALREADY_USED}
    assert len(facilitator.settled) == 1
    assert len(facilitator.calls) == racers


def test_fail_status_answers_every_call_with_it(facilitator: LocalFacilitator) -> None:
    facilitator.fail_status = 503
    accept = v1_accept()
    header = pay_v1(Wallet(), accept)
    with pytest.raises(ValueError, match=r"verify failed \(503\)"):
        verify_and_settle(facilitator.url, header, accept)
    response = httpx.get(f"{facilitator.url}/supported", timeout=10)
    assert response.status_code == 503
    assert response.headers["content-type"] == "text/plain"
    assert [path for path, _ in facilitator.calls] == ["/verify", "/supported"]

    facilitator.fail_status = None
    verified, settled = verify_and_settle(facilitator.url, header, accept)
    assert verified.is_valid and settled.success


def test_stall_seconds_delays_every_answer(facilitator: LocalFacilitator) -> None:
    accept = v1_accept()
    header = pay_v1(Wallet(), accept)
    facilitator.stall_seconds = 5
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        verify_and_settle(facilitator.url, header, accept, timeout=0.3)
    assert time.monotonic() - started < 3
    assert [path for path, _ in facilitator.calls] == ["/verify"]

    facilitator.stall_seconds = 0.3
    started = time.monotonic()
    verified, settled = verify_and_settle(facilitator.url, header, accept)
    assert time.monotonic() - started >= 0.6  # verify and settle each waited
    assert verified.is_valid and settled.success


def test_settle_fails_with_refuses_without_spending_the_nonce(
    facilitator: LocalFacilitator,
) -> None:
    body = signed(Wallet(), 2)
    facilitator.settle_fails_with = ERR_TRANSACTION_FAILED
    assert call(facilitator, "/verify", body)["isValid"] is True
    refused = call(facilitator, "/settle", body)
    assert (refused["success"], refused["errorReason"], refused["transaction"]) == (
        False,
        ERR_TRANSACTION_FAILED,
        "",
    )
    assert facilitator.settled == [] and facilitator.used_nonces == set()

    facilitator.settle_fails_with = None
    assert call(facilitator, "/settle", body)["success"] is True


def test_now_sets_the_facilitators_clock(facilitator: LocalFacilitator) -> None:
    accept = v1_accept()  # x402's v1 client signs a window of [now - 600, now + 300]
    body = request_body(pay_v1(Wallet(), accept), accept)

    facilitator.now = lambda: int(time.time()) + 3600
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_VALID_BEFORE_EXPIRED
    facilitator.now = lambda: int(time.time()) - 3600
    assert call(facilitator, "/verify", body)["invalidReason"] == ERR_VALID_AFTER_FUTURE
    facilitator.now = None
    assert call(facilitator, "/verify", body)["isValid"] is True
