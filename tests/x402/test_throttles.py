"""Payment attempts cost a claim and a facilitator call, so they are budgeted
(BROKER_X402_ATTEMPT_RATE_LIMIT): per source address for every attempt, and per paying
wallet once its signature is checked, so a forger cannot spend another wallet's budget.
A forged signature is refused before anything is written or asked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.support.http import assert_problem
from tests.support.x402 import v1_payment, x402_rows
from tests.support.x402_facilitator import LocalFacilitator
from tests.support.x402_wallet import Wallet
from tests.x402.handmade import signed, wrap


@contextmanager
def from_address(app: FastAPI, address: str) -> Iterator[TestClient]:
    with TestClient(app, client=(address, 50000), raise_server_exceptions=False) as client:
        yield client


def _spends_its_whole_budget(app: FastAPI, wallet: Wallet) -> None:
    """The wallet's own payments from many addresses: two pass, the third is over its
    budget of two, whatever was tried in its name before."""
    for n in range(2):
        with from_address(app, f"192.0.2.{n}") as client:
            paid = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, wallet)})
            assert paid.status_code == 200, paid.text
    with from_address(app, "192.0.2.99") as client:
        over = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, wallet)})
        assert_problem(over, 429, "rate_limited")


def test_payment_attempts_are_limited_per_source_address(
    make_app: Callable[..., FastAPI], x402_settings, facilitator: LocalFacilitator
):
    app = make_app(**x402_settings, x402_attempt_rate_limit="2/hour")
    with from_address(app, "203.0.113.7") as client:
        for _ in range(2):
            forged = wrap(1, signed(Wallet(), signer=Wallet()))
            assert client.get("/v1/feed", headers=forged).status_code == 402
        third = client.get("/v1/feed", headers=wrap(1, signed(Wallet(), signer=Wallet())))
        problem = assert_problem(third, 429, "rate_limited")
        assert problem["retryAfterSeconds"] >= 1
        assert third.headers["Retry-After"] == str(problem["retryAfterSeconds"])
    with from_address(app, "203.0.113.8") as other:
        paid = other.get("/v1/feed", headers={"X-PAYMENT": v1_payment(other, Wallet())})
        assert paid.status_code == 200, paid.text
    assert [path for path, _ in facilitator.calls] == ["/verify", "/settle"]


def test_a_wallet_has_its_own_budget_that_forgeries_do_not_spend(
    make_app: Callable[..., FastAPI], x402_settings, facilitator: LocalFacilitator
):
    app = make_app(**x402_settings, x402_attempt_rate_limit="2/hour")
    wallet = Wallet()
    # Forgeries naming the wallet, from many addresses: refused, and not counted for it.
    for n in range(3):
        with from_address(app, f"198.51.100.{n}") as client:
            forged = wrap(2, signed(wallet, signer=Wallet()))
            problem = assert_problem(
                client.get("/v1/feed", headers=forged), 402, "insufficient_funds_self"
            )
            assert problem["invalidReason"] == "invalid_exact_evm_payload_signature"
    assert facilitator.calls == [] and x402_rows(app) == []
    _spends_its_whole_budget(app, wallet)
    assert len(x402_rows(app)) == 2


def test_a_signature_left_to_the_facilitator_does_not_spend_the_named_wallets_budget(
    make_app: Callable[..., FastAPI], x402_settings, facilitator: LocalFacilitator
):
    """A signature longer than a plain ECDSA one (a contract wallet's) is not checked
    here: until the facilitator checks it, anyone could have named the wallet."""
    app = make_app(**x402_settings, x402_attempt_rate_limit="2/hour")
    wallet = Wallet()
    for n in range(3):
        with from_address(app, f"198.51.100.{n}") as client:
            forged = signed(wallet, signer=Wallet())
            forged["signature"] = "0x" + "ab" * 97  # no one's: the facilitator refuses it
            refused = client.get("/v1/feed", headers=wrap(2, forged))
            assert_problem(refused, 402, "insufficient_funds_self")
    assert [path for path, _ in facilitator.calls] == ["/verify"] * 3
    _spends_its_whole_budget(app, wallet)
