"""x402 payments the broker refuses, on both databases: tampered authorizations (each
answered by a fresh 402 challenge naming x402's reason), replays of a used nonce (also
re-wrapped as the other protocol version, also ten at once), a failing facilitator,
unreadable headers, payments mixed with other credentials, and a disabled account's
wallet. A refusal writes nothing: no account, no x402 claim, no settlement. And the
facilitator call holds no database lock: other requests go on while it stalls."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_broker.accounts.service import disable_key
from tests.support.accounts import balance, fund, register
from tests.support.http import assert_problem, new_key, wait_until
from tests.support.market import LISTING
from tests.support.x402 import count_accounts, new_account_key, v1_payment, v2_payment, x402_rows
from tests.support.x402_facilitator import LocalFacilitator
from tests.support.x402_wallet import Wallet, decode_header
from tests.x402.handmade import (
    HEADER,
    OTHER,
    RECIPIENT_MISMATCH,
    SIGNATURE,
    TIER,
    VALID_AFTER,
    VALID_BEFORE,
    VALUE_MISMATCH,
    signed,
    wrap,
)

# --- helpers ---------------------------------------------------------------------------


def encoded(document: Any) -> str:
    return base64.b64encode(json.dumps(document).encode()).decode()


def paths(facilitator: LocalFacilitator) -> list[str]:
    return [path for path, _ in facilitator.calls]


def assert_refused(response: httpx.Response, invalid_reason: str) -> None:
    """A 402 challenge naming why the payment was refused."""
    body = assert_problem(response, 402, "insufficient_funds_self")
    assert body["title"] == "Insufficient credits"
    assert body["invalidReason"] == invalid_reason
    assert body["error"] == body["detail"]
    assert body["accepts"] and "PAYMENT-REQUIRED" in response.headers


def assert_nothing_written(app: FastAPI, facilitator: LocalFacilitator, accounts: int = 0) -> None:
    assert count_accounts(app) == accounts
    assert x402_rows(app) == []
    assert facilitator.settled == [] and "/settle" not in paths(facilitator)


# --- tampered authorizations -------------------------------------------------------------

# (version, changes to what is signed, changes to the header, reason, facilitator asked).
# A signature that is not the payer's and a v2 value other than the one accepted are
# caught before any claim or facilitator call.
TAMPERED = [
    pytest.param(1, {"signer": Wallet()}, {}, SIGNATURE, False, id="v1-wrong-signer"),
    pytest.param(2, {"signer": Wallet()}, {}, SIGNATURE, False, id="v2-wrong-signer"),
    pytest.param(1, {"value": 4_999_999}, {}, VALUE_MISMATCH, False, id="v1-value-no-tier"),
    pytest.param(2, {"value": 500_000}, {}, VALUE_MISMATCH, False, id="v2-value-below-offer"),
    pytest.param(2, {}, {"amount": "4999999"}, VALUE_MISMATCH, False, id="v2-amount-no-tier"),
    pytest.param(1, {"to": OTHER}, {}, RECIPIENT_MISMATCH, False, id="v1-wrong-to"),
    pytest.param(2, {"to": OTHER}, {}, RECIPIENT_MISMATCH, False, id="v2-wrong-to"),
    pytest.param(
        2, {"to": OTHER}, {"payTo": OTHER}, RECIPIENT_MISMATCH, False, id="v2-wrong-payTo"
    ),
    pytest.param(1, {"valid_before_in": -60}, {}, VALID_BEFORE, True, id="v1-expired"),
    pytest.param(2, {"valid_before_in": -60}, {}, VALID_BEFORE, True, id="v2-expired"),
    pytest.param(1, {"valid_after_in": 3600}, {}, VALID_AFTER, True, id="v1-not-yet-valid"),
    pytest.param(2, {"valid_after_in": 3600}, {}, VALID_AFTER, True, id="v2-not-yet-valid"),
    pytest.param(1, {}, {"network": "base"}, "network_mismatch", False, id="v1-network"),
    pytest.param(2, {}, {"network": "eip155:8453"}, "network_mismatch", False, id="v2-network"),
    pytest.param(1, {}, {"scheme": "upto"}, "unsupported_scheme", False, id="v1-scheme"),
    pytest.param(2, {}, {"scheme": "upto"}, "unsupported_scheme", False, id="v2-scheme"),
    pytest.param(2, {}, {"asset": OTHER}, "asset_mismatch", False, id="v2-asset"),
]


@pytest.mark.parametrize(("version", "changes", "outer", "reason", "asked"), TAMPERED)
def test_a_tampered_payment_is_refused_with_x402s_reason_and_writes_nothing(
    app, client, facilitator, version, changes, outer, reason, asked
):
    headers = wrap(version, signed(Wallet(), **changes), **outer)

    assert_refused(client.get("/v1/feed", headers=headers), reason)

    assert paths(facilitator) == (["/verify"] if asked else [])
    assert_nothing_written(app, facilitator)


@pytest.mark.parametrize("version", [1, 2])
def test_the_receiving_wallet_cannot_pay_itself(make_app, x402_settings, facilitator, version):
    wallet = Wallet()
    app = make_app(**{**x402_settings, "x402_pay_to": wallet.address})
    headers = wrap(version, signed(wallet, to=wallet.address), payTo=wallet.address)

    with TestClient(app, raise_server_exceptions=False) as client:
        assert_refused(client.get("/v1/feed", headers=headers), "payer_is_pay_to")

    assert paths(facilitator) == []
    assert_nothing_written(app, facilitator)


# --- replays -----------------------------------------------------------------------------

PAYERS = {1: v1_payment, 2: v2_payment}


@pytest.mark.parametrize("version", [1, 2])
def test_a_settled_payment_presented_again_is_a_replay(app, client, facilitator, version):
    headers = {HEADER[version]: PAYERS[version](client, Wallet())}
    paid = client.get("/v1/feed", headers=headers)
    assert paid.status_code == 200, paid.text

    assert_problem(client.get("/v1/feed", headers=headers), 409, "x402_payment_replay")

    assert paths(facilitator) == ["/verify", "/settle"]
    assert len(facilitator.settled) == len(x402_rows(app)) == count_accounts(app) == 1
    assert balance(client, new_account_key(paid)) == TIER


@pytest.mark.parametrize(("first", "again"), [(1, 2), (2, 1)], ids=["v1-then-v2", "v2-then-v1"])
def test_an_authorization_rewrapped_as_the_other_version_is_a_replay(
    app, client, facilitator, first, again
):
    inner = signed(Wallet())
    paid = client.get("/v1/feed", headers=wrap(first, inner))
    assert paid.status_code == 200, paid.text

    assert_problem(client.get("/v1/feed", headers=wrap(again, inner)), 409, "x402_payment_replay")

    assert len(facilitator.settled) == len(x402_rows(app)) == count_accounts(app) == 1
    assert balance(client, new_account_key(paid)) == TIER


def test_ten_replays_at_once_settle_and_credit_once(app, live_server, facilitator):
    racers = 10
    with httpx.Client(base_url=live_server, timeout=60) as http:
        headers = {"X-PAYMENT": v1_payment(http, Wallet())}
    start = threading.Barrier(racers, timeout=20)

    def send(_: int) -> httpx.Response:
        with httpx.Client(base_url=live_server, timeout=60) as http:
            start.wait()
            return http.get("/v1/feed", headers=headers)

    with ThreadPoolExecutor(max_workers=racers) as pool:
        responses = list(pool.map(send, range(racers)))

    assert sorted(r.status_code for r in responses) == [200] + [409] * (racers - 1)
    for loser in (r for r in responses if r.status_code == 409):
        assert_problem(loser, 409, "x402_payment_replay")
    (winner,) = [r for r in responses if r.status_code == 200]
    assert len(facilitator.settled) == len(x402_rows(app)) == count_accounts(app) == 1
    with httpx.Client(base_url=live_server, timeout=60) as http:
        assert balance(http, new_account_key(winner)) == TIER


# --- a failing facilitator ----------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_an_unavailable_facilitator_is_502_and_releases_the_claim(
    app, client, facilitator, version
):
    headers = {HEADER[version]: PAYERS[version](client, Wallet())}
    facilitator.fail_status = 503

    assert_problem(client.get("/v1/feed", headers=headers), 502, "processor_unavailable")
    assert_nothing_written(app, facilitator)

    facilitator.fail_status = None  # the claim was released: the payment goes through now
    assert client.get("/v1/feed", headers=headers).status_code == 200


@pytest.mark.parametrize("version", [1, 2])
def test_a_refused_settlement_is_402_and_the_authorization_stays_usable(
    app, client, facilitator, version
):
    headers = {HEADER[version]: PAYERS[version](client, Wallet())}
    facilitator.settle_fails_with = "transaction_failed"

    assert_refused(client.get("/v1/feed", headers=headers), "transaction_failed")
    assert count_accounts(app) == 0 and x402_rows(app) == [] and facilitator.settled == []

    facilitator.settle_fails_with = None
    paid = client.get("/v1/feed", headers=headers)
    assert paid.status_code == 200, paid.text
    assert len(facilitator.settled) == len(x402_rows(app)) == count_accounts(app) == 1
    assert balance(client, new_account_key(paid)) == TIER


def test_a_stalled_facilitator_holds_no_database_lock(app, live_server, facilitator):
    stall = 3.0
    with httpx.Client(base_url=live_server, timeout=60) as http:
        headers = {"X-PAYMENT": v1_payment(http, Wallet())}
        facilitator.stall_seconds = stall
        with ThreadPoolExecutor(max_workers=1) as pool:
            paying = pool.submit(http.get, "/v1/feed", headers=headers)
            wait_until(lambda: "/verify" in paths(facilitator), "the facilitator is asked")

            started = time.monotonic()
            agent = register(http)
            fund(app, agent.account_id, TIER, real_money=True)
            listing_headers = {**agent.headers, "Idempotency-Key": new_key()}
            posted = http.post("/v1/listings", json=LISTING, headers=listing_headers)
            elapsed = time.monotonic() - started

            assert posted.status_code == 201, posted.text
            assert elapsed < stall / 2, f"took {elapsed:.2f}s while the facilitator stalled"
            assert not paying.done()
            paid = paying.result(timeout=30)
    assert paid.status_code == 200, paid.text
    assert paths(facilitator) == ["/verify", "/settle"]


# --- unreadable payments and mixed credentials ---------------------------------------------


def _version_3(client: TestClient) -> dict[str, str]:
    document = decode_header(wrap(1, signed(Wallet()))["X-PAYMENT"])
    return {"X-PAYMENT": encoded(document | {"x402Version": 3})}


def _short_nonce(client: TestClient) -> dict[str, str]:
    inner = signed(Wallet())
    inner["authorization"]["nonce"] = "0x" + "ab" * 16
    return wrap(1, inner)


MALFORMED: list[Any] = [
    pytest.param(lambda client: {"X-PAYMENT": "not base64!"}, id="not-base64"),
    pytest.param(lambda client: {"X-PAYMENT": encoded([])}, id="not-an-object"),
    pytest.param(
        # Nested past any payment's depth, well within the header's length limit.
        lambda client: {"X-PAYMENT": base64.b64encode(b"[" * 3000 + b"]" * 3000).decode()},
        id="nested-past-any-payment",
    ),
    pytest.param(_version_3, id="x402Version-3"),
    pytest.param(_short_nonce, id="nonce-not-32-bytes"),
    pytest.param(
        lambda client: wrap(1, signed(Wallet())) | wrap(2, signed(Wallet())), id="both-headers"
    ),
    pytest.param(
        lambda client: wrap(1, signed(Wallet())) | register(client).headers, id="with-api-key"
    ),
    pytest.param(
        lambda client: wrap(2, signed(Wallet())) | {"Authorization": "Bearer x"}, id="with-bearer"
    ),
]


@pytest.mark.parametrize("make_headers", MALFORMED)
def test_an_unreadable_or_mixed_payment_is_invalid_input(
    app, client, facilitator, make_headers: Callable[[TestClient], dict[str, str]]
):
    headers = make_headers(client)
    accounts = count_accounts(app)

    assert_problem(client.get("/v1/feed", headers=headers), 400, "invalid_input")

    assert facilitator.calls == []
    assert_nothing_written(app, facilitator, accounts)


# --- a disabled account's wallet --------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_a_disabled_accounts_wallet_is_refused_before_the_facilitator(
    app, client, facilitator, version
):
    wallet = Wallet()
    paid = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, wallet)})
    assert paid.status_code == 200, paid.text
    with app.state.context.db.writer() as session:
        disable_key(session, paid.json()["new_account"]["account_id"])
        session.commit()
    headers = {HEADER[version]: PAYERS[version](client, wallet)}
    calls = len(facilitator.calls)

    assert_problem(client.get("/v1/feed", headers=headers), 403, "api_key_disabled")

    assert len(facilitator.calls) == calls
    assert len(facilitator.settled) == len(x402_rows(app)) == count_accounts(app) == 1
