"""agent_broker.client against a live server: a whole deal between two agents with the
blocking client, the asyncio client, refusals as typed exceptions with the reason code,
and retries that resend the same Idempotency-Key (so a lost answer never charges twice)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agent_broker.client import (
    AsyncClient,
    Client,
    InsufficientFunds,
    InvalidInput,
    NotFound,
    ProblemError,
    Unauthorized,
)
from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from tests.support.accounts import fund
from tests.support.market import FUNDS, LISTING


def _trading_client(app, base: str, name: str) -> Client:
    client = Client(base)
    client.register()
    assert client.api_key and client.api_key.startswith("ab_")
    client.set_contact(name, "ops@agents.dev")
    client.set_route(f"https://agents.dev/{name}/", "JSONRPC")
    fund(app, client.account().account_id, FUNDS, real_money=True)
    return client


def test_a_whole_deal_with_the_blocking_client(app, live_server):
    seller, buyer = (
        _trading_client(app, live_server, "seller"),
        _trading_client(app, live_server, "buyer"),
    )
    try:
        listing = seller.post_listing(**LISTING)
        page = buyer.feed(q="deduplicate", sort="price_asc")
        assert [item.id for item in page.listings] == [listing.id]
        thread = buyer.open_thread(listing.id, "2 days, as listed")
        seller.offer(thread.id, "3 days")
        buyer.offer(thread.id, "3 days, agreed")
        assert seller.thread(thread.id).turn == "poster"
        sealed = seller.finalize(thread.id)
        assert buyer.deal(sealed.id).id == sealed.id
        buyer.rate(sealed.id, 5, delivered=True)
        handle = seller.account().handle
        assert seller.reputation(handle).handle == handle
        hook = seller.set_webhook("https://agents.dev/events")
        assert hook.secret.startswith("whsec_")
        seller.delete_webhook()
        assert seller.account().balance_micro == FUNDS - POSTING_FEE_MICRO - DEAL_FEE_MICRO
    finally:
        seller.close_client()
        buyer.close_client()


def test_refusals_are_typed_and_carry_the_reason(app, live_server):
    with Client(live_server) as anonymous:
        with pytest.raises(Unauthorized) as refused:
            anonymous.account()
        assert refused.value.reason == "unauthorized" and refused.value.status == 401
    with Client(live_server) as agent:
        agent.register()
        with pytest.raises(NotFound) as missing:
            agent.listing("0b4e7c1e-2f0a-4d8e-9a51-6f2d3c4b5a69")
        assert missing.value.reason == "not_found"
        with pytest.raises(InsufficientFunds) as short:
            agent.post_listing(**LISTING)
        assert short.value.reason == "insufficient_funds_self"
        with pytest.raises(InvalidInput) as invalid:
            agent.feed(q="!!!")
        assert invalid.value.reason == "invalid_input" and invalid.value.detail
        assert isinstance(invalid.value, ProblemError)


class _LoseFirstAnswer(httpx.HTTPTransport):
    """Delivers the first POST of a listing, then drops its answer on the way back."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and request.url.path == "/v1/listings":
            self.keys.append(request.headers["Idempotency-Key"])
            if len(self.keys) == 1:
                response.read()
                raise httpx.ReadError("connection lost", request=request)
        return response


def test_a_lost_answer_is_retried_with_the_same_key_and_charged_once(app, live_server):
    seller = _trading_client(app, live_server, "seller")
    transport = _LoseFirstAnswer()
    flaky = Client(
        live_server,
        seller.api_key,
        http=httpx.Client(base_url=live_server, transport=transport),
        backoff_seconds=0,
    )
    listing = flaky.post_listing(**LISTING)
    assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1]
    assert [item.id for item in seller.feed().listings] == [listing.id]
    assert seller.account().balance_micro == FUNDS - POSTING_FEE_MICRO
    seller.close_client()


THREAD = {
    "id": "0b4e7c1e-2f0a-4d8e-9a51-6f2d3c4b5a69",
    "listing_id": "1c5f8d2f-3a1b-4e9f-8b62-7a3e4d5c6b7a",
    "status": "rejected",
    "turn": "poster",
    "diff": "terms",
    "amount_micro": 1_000_000,
    "price_micro": 2_500_000,
    "created_at": "2026-11-23T10:00:00Z",
    "updated_at": "2026-11-23T10:05:00Z",
}


def test_a_transient_5xx_is_retried_with_the_same_key_and_a_4xx_is_not():
    seen: list[tuple[str, str | None]] = []
    answers = iter([httpx.Response(503), httpx.Response(200, json=THREAD)])

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, request.headers.get("Idempotency-Key")))
        if request.url.path.endswith("/close"):
            return next(answers)
        return httpx.Response(409, json={"reason": "out_of_turn", "detail": "Not your turn."})

    http = httpx.Client(base_url="https://broker.test", transport=httpx.MockTransport(handler))
    client = Client("https://broker.test", "ab_key", http=http, backoff_seconds=0)
    assert client.close(THREAD["id"]).status == "rejected"
    assert len(seen) == 2 and seen[0][1] == seen[1][1] is not None
    with pytest.raises(ProblemError) as refused:
        client.offer(THREAD["id"], "terms")
    assert refused.value.reason == "out_of_turn" and len(seen) == 3  # a 409 is final


def test_the_asyncio_client(app, live_server):
    async def run():  # type: ignore[no-untyped-def]
        async with AsyncClient(live_server) as agent:
            registered = await agent.register()
            account = await agent.account()
            assert account.account_id == registered.account_id
            page = await agent.feed(limit=5)
            return agent.api_key, page

    key, page = asyncio.run(run())
    assert key and page.listings == []
