"""A settlement whose outcome is unknown (the facilitator did not answer while settling, or
answered that the transfer is pending, or failed naming a transaction): nothing is
credited, the authorization stays refused, the payer is told it is pending, and
`agent-broker admin x402-pending` lists the claim for the operator to reconcile on
chain. One "settlement_pending" is retried once, as x402's own servers do."""

from __future__ import annotations

from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.http.outbound import OutboundRefused
from agent_broker.payments.x402.gate import X402
from tests.support.http import assert_problem
from tests.support.x402 import count_accounts, v1_payment, x402_rows
from tests.support.x402_facilitator import LocalFacilitator
from tests.support.x402_wallet import Wallet


def test_an_unknown_settlement_credits_nothing_and_is_listed(
    app, client, facilitator, database_url, monkeypatch
):
    async def unreachable(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OutboundRefused("timeout", "no complete answer within 30 s")

    accounts = count_accounts(app)
    wallet = Wallet()
    payment = v1_payment(client, wallet)
    monkeypatch.setattr(app.state.context.part(X402).facilitator, "settle", unreachable)
    assert_problem(
        client.get("/v1/feed", headers={"X-PAYMENT": payment}), 502, "processor_unavailable"
    )
    (claim,) = x402_rows(app)
    assert claim.status == "pending" and claim.account_id is None
    assert count_accounts(app) == accounts
    # The same authorization is not taken again: the chain may have moved the money.
    assert_problem(
        client.get("/v1/feed", headers={"X-PAYMENT": payment}), 409, "x402_payment_replay"
    )

    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    listed = CliRunner().invoke(cli, ["admin", "x402-pending", "--older-than", "0"])
    assert listed.exit_code == 0, listed.output
    (line,) = listed.output.strip().splitlines()
    assert line.startswith(claim.id) and wallet.address.lower() in line
    assert "5000000 µUSD" in line
    recent = CliRunner().invoke(cli, ["admin", "x402-pending"])
    assert recent.output == "no x402 payment awaits reconciliation\n"


def test_a_pending_settlement_keeps_the_claim_and_tells_the_payer(
    app, client, facilitator: LocalFacilitator, database_url, monkeypatch
):
    """ "settlement_pending" twice (the first answer and the one retry): the transfer may
    still land, so the claim stays pending with its transaction, nothing is credited, the
    answer says so, and the operator sees it."""
    facilitator.pending_settles = 2
    accounts = count_accounts(app)
    wallet = Wallet()
    payment = v1_payment(client, wallet)

    problem = assert_problem(
        client.get("/v1/feed", headers={"X-PAYMENT": payment}), 502, "processor_unavailable"
    )
    assert problem["settlement"]["status"] == "pending"
    assert problem["settlement"]["transaction"].startswith("0x")
    assert "pending" in problem["detail"] and problem.get("new_account") is None
    assert [path for path, _ in facilitator.calls] == ["/verify", "/settle", "/settle"]
    (claim,) = x402_rows(app)
    assert (claim.status, claim.account_id) == ("pending", None)
    assert claim.transaction == problem["settlement"]["transaction"]
    assert "settlement_pending" in claim.note
    assert count_accounts(app) == accounts
    again = assert_problem(
        client.get("/v1/feed", headers={"X-PAYMENT": payment}), 409, "x402_payment_replay"
    )
    assert "pending" in again["detail"]

    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    listed = CliRunner().invoke(cli, ["admin", "x402-pending", "--older-than", "0"])
    (line,) = listed.output.strip().splitlines()
    assert line.startswith(f"{claim.id}\tpending\t") and claim.transaction in line


def test_a_failed_settlement_naming_a_transaction_is_kept_pending(
    app, client, facilitator: LocalFacilitator, monkeypatch
):
    """Any failed settlement that names a transaction may still land: not a refusal."""
    original = facilitator.settle

    def reverted_or_not(body):  # type: ignore[no-untyped-def]
        return original(body) | {
            "success": False,
            "errorReason": "transaction_failed",
            "transaction": "0x" + "ab" * 32,
        }

    monkeypatch.setattr(facilitator, "settle", reverted_or_not)
    problem = assert_problem(
        client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, Wallet())}),
        502,
        "processor_unavailable",
    )
    assert problem["settlement"]["transaction"] == "0x" + "ab" * 32
    (claim,) = x402_rows(app)
    assert claim.status == "pending" and claim.transaction == "0x" + "ab" * 32


def test_one_pending_answer_is_cured_by_the_retry(app, client, facilitator: LocalFacilitator):
    facilitator.pending_settles = 1
    accounts = count_accounts(app)

    paid = client.get("/v1/feed", headers={"X-PAYMENT": v1_payment(client, Wallet())})

    assert paid.status_code == 200, paid.text
    assert paid.json()["new_account"]["api_key"]
    assert [path for path, _ in facilitator.calls] == ["/verify", "/settle", "/settle"]
    (claim,) = x402_rows(app)
    assert claim.status == "settled" and count_accounts(app) == accounts + 1
