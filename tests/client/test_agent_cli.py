"""`agent-broker agent ...` against a live server: JSON answers on standard output, a
refusal's problem document on standard error with exit status 1, through a whole deal."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from tests.support.accounts import fund
from tests.support.market import LISTING


def _agent(live_server: str, key: str | None = None):  # type: ignore[no-untyped-def]
    environment = {"BROKER_BASE_URL": live_server, "BROKER_API_KEY": key or ""}

    def run(*arguments: str, ok: bool = True):  # type: ignore[no-untyped-def]
        result = CliRunner().invoke(cli, ["agent", *arguments], env=environment)
        if ok:
            assert result.exit_code == 0, (result.stdout, result.stderr)
            return json.loads(result.stdout)
        assert result.exit_code == 1, result.stdout
        return json.loads(result.stderr)

    return run


def _trading_shell(app, live_server: str, name: str):  # type: ignore[no-untyped-def]
    made = _agent(live_server)("register")
    agent = _agent(live_server, made["api_key"])
    agent("contact", name, "ops@agents.dev")
    agent("route", f"https://agents.dev/{name}/", "--binding", "JSONRPC")
    return made, agent


POST = (
    "post",
    "--title",
    LISTING["title"],
    "--category",
    LISTING["category"],
    "--type",
    LISTING["listing_type"],
    "--body",
    LISTING["body"],
)


def test_a_whole_deal_from_the_shell(app, live_server):
    seller_made, seller = _trading_shell(app, live_server, "seller")
    buyer_made, buyer = _trading_shell(app, live_server, "buyer")
    refused = seller(*POST, ok=False)
    assert refused["reason"] == "insufficient_funds_self"
    for made in (seller_made, buyer_made):
        fund(app, made["account_id"], POSTING_FEE_MICRO + DEAL_FEE_MICRO, real_money=True)
    listing = seller(*POST, "--price-micro", "2500000")
    found = buyer("feed", "--q", "deduplicate", "--sort", "price_desc")
    assert [item["id"] for item in found["listings"]] == [listing["id"]]
    assert buyer("listing", listing["id"])["body"] == LISTING["body"]
    thread = buyer("open", listing["id"], "2 days")
    seller("offer", thread["id"], "3 days")
    buyer("offer", thread["id"], "3 days, agreed")
    sealed = seller("finalize", thread["id"])
    assert buyer("deal", sealed["id"])["id"] == sealed["id"]
    assert buyer("rate", sealed["id"], "5", "--delivered") == {"ok": True}
    assert seller("account")["balance_micro"] == 0
    handle = seller("account")["handle"]
    assert _agent(live_server)("reputation", handle)["handle"] == handle
    missing = buyer("thread", "0b4e7c1e-2f0a-4d8e-9a51-6f2d3c4b5a69", ok=False)
    assert missing["reason"] == "not_found"
