"""Escrow deals through the standalone client (blocking and asyncio) and its command line,
against a live server: the price held at the seal, delivery and acceptance, a rejection
ruled on by the evaluator, and a refusal as a typed exception with its reason."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from agent_broker_client import AsyncClient, Client, ProblemError
from agent_broker_client import cli as shell
from tests.support.accounts import fund
from tests.support.market import LISTING

PRICE = 2_500_000
FEE = PRICE // 100  # BROKER_ESCROW_FEE_BPS's default: 1%


def _trader(app, base: str, name: str, funds: int) -> Client:
    client = Client(base)
    client.register()
    client.set_contact(name, "ops@agents.dev")
    client.set_route(f"https://agents.dev/{name}/", "JSONRPC")
    if funds:
        fund(app, str(client.account().account_id), funds, real_money=True)
    return client


@pytest.fixture
def parties(app, live_server):
    seller = _trader(app, live_server, "seller", 2 * (POSTING_FEE_MICRO + DEAL_FEE_MICRO))
    buyer = _trader(app, live_server, "buyer", 2 * (DEAL_FEE_MICRO + PRICE))
    evaluator = _trader(app, live_server, "evaluator", 0)
    yield seller, buyer, evaluator
    for client in (seller, buyer, evaluator):
        client.close_client()


def _escrow_listing(seller: Client, evaluator: Client) -> str:
    listing = seller.post_listing(
        **{**LISTING, "price_micro": PRICE},
        settlement="escrow",
        delivery_hours=24,
        evaluator=evaluator.account().handle,
    )
    assert listing.settlement == "escrow" and listing.delivery_hours == 24
    return str(listing.id)


def _sealed(seller: Client, buyer: Client, evaluator: Client) -> str:
    listing_id = _escrow_listing(seller, evaluator)
    thread = buyer.open_thread(listing_id, "as listed", price_micro=PRICE)
    assert thread.price_micro == PRICE
    deal = seller.finalize(thread.id, agreed_price_micro=PRICE)
    assert deal.escrow.status == "held" and deal.escrow.amount_micro == PRICE
    return str(deal.id)


def test_an_escrow_deal_with_the_blocking_client(parties):
    seller, buyer, evaluator = parties
    deal_id = _sealed(seller, buyer, evaluator)
    assert buyer.account().held_micro == PRICE
    with pytest.raises(ProblemError) as refused:
        buyer.deliver(deal_id)
    assert refused.value.reason == "forbidden"
    delivered = seller.deliver(deal_id, note="done", evidence_sha256="cd" * 32)
    assert delivered.escrow.status == "delivered"
    accepted = buyer.accept(deal_id)
    assert accepted.escrow.status == "released"
    assert accepted.escrow.settlement.released_micro == PRICE - FEE
    assert seller.account().balance_micro == POSTING_FEE_MICRO + DEAL_FEE_MICRO + PRICE - FEE


def test_a_rejected_escrow_ruled_with_the_asyncio_client(parties, live_server):
    seller, buyer, evaluator = parties
    deal_id = _sealed(seller, buyer, evaluator)
    seller.deliver(deal_id)

    async def dispute_and_rule():  # type: ignore[no-untyped-def]
        async with AsyncClient(live_server, buyer.api_key) as buyer_async:
            await buyer_async.reject(deal_id, "half of it")
        async with AsyncClient(live_server, evaluator.api_key) as evaluator_async:
            return await evaluator_async.rule(deal_id, "split", "half done", seller_share_bps=5_000)

    ruled = asyncio.run(dispute_and_rule())
    assert ruled.escrow.status == "split" and ruled.escrow.ruling.token.startswith("v4.public.")
    assert buyer.account().held_micro == 0


def test_an_escrow_deal_from_the_shell(parties, live_server, monkeypatch):
    seller, buyer, evaluator = parties
    listing_id = _escrow_listing(seller, evaluator)

    def run(client: Client, *arguments: str) -> dict:
        monkeypatch.setenv("BROKER_BASE_URL", live_server)
        monkeypatch.setenv("BROKER_API_KEY", client.api_key or "")
        out, err = io.StringIO(), io.StringIO()
        assert shell.main(list(arguments), out=out, err=err) == 0, err.getvalue()
        return json.loads(out.getvalue())

    thread = run(buyer, "open", listing_id, "as listed", "--price-micro", str(PRICE))
    deal = run(seller, "finalize", thread["id"], "--agreed-price-micro", str(PRICE))
    assert deal["escrow"]["status"] == "held"
    run(seller, "deliver", deal["id"], "--note", "done")
    rejected = run(buyer, "reject", deal["id"], "not as agreed")
    assert rejected["escrow"]["status"] == "rejected"
    ruled = run(evaluator, "rule", deal["id"], "refund", "not delivered")
    assert ruled["escrow"]["status"] == "refunded"
