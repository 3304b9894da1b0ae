"""A settlement whose outcome is unknown (the facilitator did not answer while settling):
nothing is credited, the authorization stays refused, and `agent-broker admin
x402-pending` lists the claim for the operator to reconcile on chain."""

from __future__ import annotations

from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.http.outbound import OutboundRefused
from tests.helpers import assert_problem
from tests.x402.conftest import count_accounts, v1_payment, x402_rows
from tests.x402.wallet import Wallet


def test_an_unknown_settlement_credits_nothing_and_is_listed(
    app, client, facilitator, database_url, monkeypatch
):
    async def unreachable(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OutboundRefused("timeout", "no complete answer within 30 s")

    accounts = count_accounts(app)
    wallet = Wallet()
    payment = v1_payment(client, wallet)
    monkeypatch.setattr(app.state.x402.facilitator, "settle", unreachable)
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
