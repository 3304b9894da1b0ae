"""The payer is the wallet the authorization names. A payload carrying anything beside the
EIP-3009 authorization and its signature (a Permit2 authorization, which a facilitator
settles from whoever signed it) is refused unread; a facilitator answer naming another
payer, network or amount than the payment's credits nothing, links nothing, and keeps
the claim as `mismatch` for the operator. Offers name the one transfer method taken."""

from __future__ import annotations

import base64
import json

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.ledger.models import JournalEntry
from tests.support.http import assert_problem
from tests.support.x402 import (
    CAIP2,
    NETWORK,
    challenge_of,
    count_accounts,
    v1_payment,
    v2_payment,
    x402_rows,
)
from tests.support.x402_facilitator import LocalFacilitator
from tests.support.x402_wallet import Wallet
from tests.x402.handmade import signed, wrap

HEADERS = {1: "X-PAYMENT", 2: "PAYMENT-SIGNATURE"}


def _x402_entries(app) -> int:
    with app.state.context.db.reader() as session:
        kinds = session.scalars(select(JournalEntry.kind)).all()
    return sum(kind == "x402_payment" for kind in kinds)


def _pay(client, wallet: Wallet, version: int) -> dict[str, str]:
    value = v1_payment(client, wallet) if version == 1 else v2_payment(client, wallet)
    return {HEADERS[version]: value}


def test_every_offer_names_the_eip3009_transfer_method(client):
    response = challenge_of(client, "GET", "/v1/feed")
    assert {o["extra"]["assetTransferMethod"] for o in response.json()["accepts"]} == {"eip3009"}
    v2 = json.loads(base64.b64decode(response.headers["PAYMENT-REQUIRED"]))
    assert {o["extra"]["assetTransferMethod"] for o in v2["accepts"]} == {"eip3009"}
    manifest = client.get("/.well-known/x402").json()
    assert {t["extra"]["assetTransferMethod"] for t in manifest["tiers"]} == {"eip3009"}


@pytest.mark.parametrize("version", [1, 2])
def test_a_permit2_transfer_from_another_wallet_opens_and_links_nothing(
    app, client, facilitator: LocalFacilitator, version
):
    attacker, victim = Wallet(), Wallet()
    permit2 = signed(attacker)
    # The decoy names the victim; the facilitator would settle the attacker's Permit2.
    decoy = signed(victim, signer=attacker)
    inner = decoy | {
        "permit2Authorization": {**permit2["authorization"], "signature": permit2["signature"]}
    }
    accounts = count_accounts(app)

    problem = assert_problem(
        client.get("/v1/feed", headers=wrap(version, inner)), 400, "invalid_input"
    )
    assert "permit2Authorization" in problem["detail"]
    assert problem.get("new_account") is None
    assert count_accounts(app) == accounts and x402_rows(app) == []
    assert facilitator.calls == [] and facilitator.settled == []

    # The victim's own first payment opens the victim's own account.
    paid = client.get("/v1/feed", headers=_pay(client, victim, version))
    assert paid.status_code == 200, paid.text
    assert paid.json()["new_account"]["api_key"]
    assert count_accounts(app) == accounts + 1


def test_a_verified_payer_other_than_the_authorizations_settles_nothing(
    app, client, facilitator: LocalFacilitator, database_url, monkeypatch
):
    wallet = Wallet()
    facilitator.verify_payer = Wallet().address
    accounts = count_accounts(app)
    payment = _pay(client, wallet, 1)

    problem = assert_problem(
        client.get("/v1/feed", headers=payment), 402, "insufficient_funds_self"
    )
    assert problem["invalidReason"] == "settlement_mismatch"
    assert [path for path, _ in facilitator.calls] == ["/verify"]
    assert count_accounts(app) == accounts and _x402_entries(app) == 0
    (claim,) = x402_rows(app)
    assert (claim.status, claim.account_id) == ("mismatch", None)
    assert claim.note.startswith("verify: payer ")
    again = assert_problem(client.get("/v1/feed", headers=payment), 409, "x402_payment_replay")
    assert "not credited" in again["detail"]

    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    listed = CliRunner().invoke(cli, ["admin", "x402-pending", "--older-than", "0"])
    assert listed.exit_code == 0, listed.output
    (line,) = listed.output.strip().splitlines()
    assert line.startswith(f"{claim.id}\tmismatch\t") and wallet.address.lower() in line


@pytest.mark.parametrize(
    ("knob", "value", "named"),
    [
        # Ids of their own: a fresh address would name the test differently in each
        # process, and parallel runs (pytest-xdist) need every worker to collect alike.
        pytest.param("settle_payer", Wallet().address, "payer", id="payer"),
        pytest.param("settle_network", "eip155:8453", "network", id="network"),
        pytest.param("settle_amount", "500000", "amount", id="amount"),
    ],
)
@pytest.mark.parametrize("version", [1, 2])
def test_a_settlement_naming_another_payer_network_or_amount_credits_nothing(
    app, client, facilitator: LocalFacilitator, knob, value, named, version
):
    wallet = Wallet()
    if knob == "settle_network" and version == 1:
        value = "base"
    setattr(facilitator, knob, value)
    accounts = count_accounts(app)

    problem = assert_problem(
        client.get("/v1/feed", headers=_pay(client, wallet, version)),
        402,
        "insufficient_funds_self",
    )
    assert problem["invalidReason"] == "settlement_mismatch"
    assert problem.get("new_account") is None
    assert count_accounts(app) == accounts and _x402_entries(app) == 0
    (claim,) = x402_rows(app)
    assert claim.status == "mismatch" and claim.account_id is None
    assert claim.note.startswith(f"settle: {named} ")
    assert claim.transaction == facilitator.settled[0]["transaction"]
    assert claim.network == (NETWORK if version == 1 else CAIP2)


def test_a_matching_settlement_without_an_amount_is_credited(
    app, client, facilitator: LocalFacilitator, monkeypatch
):
    """The amount is optional in a facilitator's answer; the signed value was checked."""
    original = facilitator.settle

    def without_amount(body):  # type: ignore[no-untyped-def]
        answer = original(body)
        answer.pop("amount", None)
        return answer

    monkeypatch.setattr(facilitator, "settle", without_amount)
    paid = client.get("/v1/feed", headers=_pay(client, Wallet(), 1))
    assert paid.status_code == 200, paid.text
    assert _x402_entries(app) == 1


@pytest.mark.parametrize("version", [1, 2])
def test_a_signature_by_another_wallet_is_refused_before_any_claim(
    app, client, facilitator: LocalFacilitator, version
):
    forged = wrap(version, signed(Wallet(), signer=Wallet()))
    problem = assert_problem(client.get("/v1/feed", headers=forged), 402, "insufficient_funds_self")
    assert problem["invalidReason"] == "invalid_exact_evm_payload_signature"
    assert facilitator.calls == [] and x402_rows(app) == []
