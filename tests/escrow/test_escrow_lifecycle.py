"""An escrow deal over time: the deadline job, ratings and the purge waiting for the
settlement, the seller's record, the events, the operator's ruling and payout, and the
ledger check that catches an escrow the journal does not bear out."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.tokens.service import verify
from tests.support.accounts import balance_and_held, handle_of
from tests.support.escrow import (
    PRICE,
    escrow_market,
    ledger_problems,
    rejected,
    sealed,
    step,
)
from tests.support.http import assert_problem
from tests.support.jobs import run
from tests.support.ledger import tamper
from tests.support.market import dispute, rate

DAY = timedelta(days=1)


def _escrow(client, agent, deal_id: str) -> dict:
    response = client.get(f"/v1/deals/{deal_id}", headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()["escrow"]


def test_an_undelivered_escrow_is_refunded_at_its_deadline(app, client):
    market = escrow_market(app, client, delivery_hours=24)
    deal = sealed(client, market)["id"]
    clock.advance(timedelta(hours=23))
    assert run(app, "escrow-deadlines") == "settled 0 escrows past their deadline"
    clock.advance(timedelta(hours=2))
    # Past the deadline and before the job, the seller can no longer deliver.
    assert_problem(step(client, market.seller, deal, "delivery"), 409, "out_of_turn")
    assert run(app, "escrow-deadlines") == "settled 1 escrows past their deadline"
    escrow = _escrow(client, market.buyer, deal)
    assert escrow["status"] == "refunded"
    assert escrow["settlement"]["settled_by"] == "deadline"
    assert balance_and_held(client, market.buyer) == (PRICE, 0)
    assert ledger_problems(app) == []


def test_a_delivery_neither_accepted_nor_rejected_is_released_at_its_deadline(app, client):
    market = escrow_market(app, client, acceptance_hours=12)
    deal = sealed(client, market)["id"]
    step(client, market.seller, deal, "delivery")
    clock.advance(timedelta(hours=13))
    assert_problem(step(client, market.buyer, deal, "rejection", reason="late"), 409, "out_of_turn")
    assert run(app, "escrow-deadlines") == "settled 1 escrows past their deadline"
    assert _escrow(client, market.seller, deal)["status"] == "released"


def test_a_rejected_escrow_waits_for_its_ruling(app, client):
    market = escrow_market(app, client, acceptance_hours=12)
    deal = rejected(client, market, "wrong format")
    clock.advance(10 * DAY)
    assert run(app, "escrow-deadlines") == "settled 0 escrows past their deadline"
    assert _escrow(client, market.buyer, deal)["status"] == "rejected"
    # Kept past the seal's 7 days while open, and no deadline is overdue in the ledger.
    assert run(app, "purge-deals") == "purged 0 deals"
    assert ledger_problems(app) == []


def test_the_ledger_check_names_an_escrow_left_open_past_its_deadline(app, client):
    market = escrow_market(app, client, delivery_hours=1)
    deal = sealed(client, market)["id"]
    clock.advance(timedelta(minutes=65))
    assert ledger_problems(app) == []  # within one job period (and a clock skew) of it
    clock.advance(timedelta(minutes=10))
    kinds = [kind for kind, detail in ledger_problems(app) if deal in detail]
    assert kinds == ["escrow_overdue"]
    run(app, "escrow-deadlines")
    assert ledger_problems(app) == []


def test_the_ledger_check_names_an_escrow_the_journal_does_not_bear_out(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    assert ledger_problems(app) == []
    tamper(app, "UPDATE deal_escrows SET amount_micro = amount_micro + 1")
    assert [kind for kind, detail in ledger_problems(app) if deal in detail] == ["escrow_mismatch"]
    tamper(app, "UPDATE deal_escrows SET amount_micro = amount_micro - 1")
    step(client, market.seller, deal, "delivery")
    step(client, market.buyer, deal, "acceptance")
    assert ledger_problems(app) == []
    tamper(app, "UPDATE deal_escrows SET released_micro = released_micro + 5")
    assert [kind for kind, detail in ledger_problems(app) if deal in detail] == ["escrow_mismatch"]


def test_ratings_open_once_the_escrow_settles_and_count_from_then(app, client):
    market = escrow_market(app, client, delivery_hours=240)
    deal = sealed(client, market)["id"]
    assert_problem(rate(client, market.buyer, deal, score=5), 409, "out_of_turn")
    assert_problem(dispute(client, market.seller, deal), 409, "out_of_turn")
    clock.advance(6 * DAY)
    step(client, market.seller, deal, "delivery")
    step(client, market.buyer, deal, "acceptance")
    clock.advance(2 * DAY)  # 8 days after the seal, 2 after the settlement
    assert rate(client, market.buyer, deal, score=5, delivered=True).status_code == 201
    clock.advance(6 * DAY)
    assert_problem(rate(client, market.seller, deal, score=4), 410, "deal_purged")


def test_a_settled_escrow_deal_is_purged_a_deal_life_after_settling(app, client):
    market = escrow_market(app, client, delivery_hours=240)
    deal = sealed(client, market)["id"]
    clock.advance(5 * DAY)
    step(client, market.seller, deal, "delivery")
    step(client, market.buyer, deal, "acceptance")
    clock.advance(3 * DAY)  # 8 days after the seal
    assert run(app, "purge-deals") == "purged 0 deals"
    assert client.get(f"/v1/deals/{deal}", headers=market.buyer.headers).status_code == 200
    clock.advance(5 * DAY)
    assert run(app, "purge-deals") == "purged 1 deals"
    assert_problem(
        client.get(f"/v1/deals/{deal}", headers=market.buyer.headers), 410, "deal_purged"
    )


def test_the_sellers_record_counts_settled_escrows(app, client):
    market = escrow_market(app, client, delivery_hours=24)
    handle = handle_of(client, market.seller)
    on_time = sealed(client, market)["id"]
    step(client, market.seller, on_time, "delivery")
    step(client, market.buyer, on_time, "acceptance")
    record = client.get(f"/v1/reputation/{handle}").json()
    assert record["escrow"] == {"released": 1, "refunded": 0, "split": 0, "delivered_on_time": 1}
    buyer_record = client.get(f"/v1/reputation/{handle_of(client, market.buyer)}").json()
    assert buyer_record["escrow"] == {
        "released": 0,
        "refunded": 0,
        "split": 0,
        "delivered_on_time": 0,
    }


def test_an_acceptance_past_accept_by_before_the_job_releases_as_the_job_would(app, client):
    market = escrow_market(app, client, acceptance_hours=12)
    deal = sealed(client, market)["id"]
    step(client, market.seller, deal, "delivery")
    clock.advance(timedelta(hours=13))
    accepted = step(client, market.buyer, deal, "acceptance")
    assert accepted.status_code == 200, accepted.text
    escrow = accepted.json()["escrow"]
    assert (escrow["status"], escrow["settlement"]["settled_by"]) == ("released", "accepted")
    assert run(app, "escrow-deadlines") == "settled 0 escrows past their deadline"
    assert ledger_problems(app) == []


def test_an_events_escrow_is_the_deals_escrow_object(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    step(client, market.seller, deal, "delivery")
    page = client.get("/v1/events", params={"wait": 2}, headers=market.buyer.headers).json()
    (delivered,) = [e for e in page["events"] if e["type"] == "deal.delivered"]
    # Nothing unset in it (no ruling yet, no evidence given) shows as null.
    assert delivered["data"] == {"deal_id": deal, "escrow": _escrow(client, market.buyer, deal)}
    assert "ruling" not in delivered["data"]["escrow"]
    assert "evidence_sha256" not in delivered["data"]["escrow"]["delivery"]


def test_both_parties_and_the_evaluator_are_told_of_each_step(app, client):
    market = escrow_market(app, client)
    deal = rejected(client, market, "incomplete")
    step(client, market.evaluator, deal, "ruling", outcome="release", reason="complete after all")

    def types(agent) -> list[str]:
        page = client.get("/v1/events", params={"wait": 2}, headers=agent.headers).json()
        return [e["type"] for e in page["events"] if e["data"].get("deal_id") == deal]

    steps = ["deal.sealed", "deal.delivered", "deal.rejected", "deal.released", "deal.ruled"]
    assert types(market.seller) == steps
    assert types(market.buyer) == steps
    assert types(market.evaluator) == ["deal.rejected", "deal.ruled"]


@pytest.fixture
def cli_env(database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    monkeypatch.setenv("BROKER_VAR_DIR", str(tmp_path / "cli-var"))


def test_the_operator_rules_where_no_account_evaluates(app, client, cli_env):
    market = escrow_market(app, client, with_evaluator=False)
    deal = sealed(client, market)["id"]
    step(client, market.seller, deal, "delivery")
    rule = ["admin", "escrow-rule", deal, "--outcome", "refund", "--reason", "never arrived"]
    early = CliRunner().invoke(cli, rule)
    assert early.exit_code == 1 and "out_of_turn" in early.output
    step(client, market.buyer, deal, "rejection", reason="never arrived")
    # A split without the seller's share is a bad argument (2), and nothing moves.
    split = ["admin", "escrow-rule", deal, "--outcome", "split", "--reason", "half done"]
    unshared = CliRunner().invoke(cli, split)
    assert unshared.exit_code == 2 and "invalid_input" in unshared.output
    result = CliRunner().invoke(cli, rule)
    assert result.exit_code == 0, result.output
    ruled = json.loads(result.stdout)["escrow"]  # log lines go to stderr
    assert ruled["status"] == "refunded" and ruled["settlement"]["settled_by"] == "operator"
    assert balance_and_held(client, market.buyer) == (PRICE, 0)
    # Anyone can check the ruling with the published key document.
    keys = client.get("/.well-known/paseto-keys.json").json()["keys"]
    claims = verify(ruled["ruling"]["token"], keys, expected_typ="svc.ruling.v1", now=clock.now())
    assert (claims["deal_id"], claims["outcome"], claims["evaluator"]) == (
        deal,
        "refund",
        "operator",
    )
    assert CliRunner().invoke(cli, rule).exit_code == 1  # settled: nothing moves again


def test_the_operator_cannot_rule_for_a_named_evaluator(app, client, cli_env):
    market = escrow_market(app, client)
    deal = rejected(client, market, "no")
    rule = ["admin", "escrow-rule", deal, "--outcome", "refund", "--reason", "r"]
    result = CliRunner().invoke(cli, rule)
    assert result.exit_code == 1 and "forbidden" in result.output


def test_a_payout_is_journalled_and_leaves_the_balance(app, client, cli_env):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    step(client, market.seller, deal, "delivery")
    step(client, market.buyer, deal, "acceptance")
    seller = market.seller
    balance = balance_and_held(client, seller)[0]
    payout = ["admin", "payout", seller.account_id, str(balance), "--reference", "wire 2211"]
    assert CliRunner().invoke(cli, payout).exit_code == 0
    assert balance_and_held(client, seller) == (0, 0)
    assert CliRunner().invoke(cli, payout).exit_code == 1  # nothing left to pay out
    assert ledger_problems(app) == []


def test_anyone_checks_a_ruling_with_verify_ruling(app, client, live_server):
    market = escrow_market(app, client)
    deal = rejected(client, market, "late and partial")
    ruling = step(
        client,
        market.evaluator,
        deal,
        "ruling",
        outcome="split",
        seller_share_bps=3_000,
        reason="partly delivered",
    ).json()["escrow"]["ruling"]
    check = ["verify-ruling", ruling["token"], "--service", live_server, "--deal-id", deal]
    verified = CliRunner().invoke(cli, [*check, "--reason", ruling["reason"]])
    assert verified.exit_code == 0, verified.output
    claims = json.loads(verified.stdout)
    assert (claims["typ"], claims["outcome"], claims["seller_share_bps"]) == (
        "svc.ruling.v1",
        "split",
        3_000,
    )
    assert claims["evaluator"] == handle_of(client, market.evaluator)
    other_reason = CliRunner().invoke(cli, [*check, "--reason", "something else"])
    assert other_reason.exit_code == 1 and "another reason" in other_reason.output
    other_deal = ["verify-ruling", ruling["token"], "--service", live_server, "--deal-id", "x"]
    assert CliRunner().invoke(cli, other_deal).exit_code == 1
    forged = ruling["token"][:-4] + ("AAAA" if not ruling["token"].endswith("AAAA") else "BBBB")
    assert (
        CliRunner().invoke(cli, ["verify-ruling", forged, "--service", live_server]).exit_code == 1
    )
