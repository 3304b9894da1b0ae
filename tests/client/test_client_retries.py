"""The standalone client retries only what cannot double: reads, and writes carrying an
Idempotency-Key (resent with the same key, so the service answers the first result).
An offer, a rating, a dispute or the webhook PUT whose answer is lost on the wire is sent
once and the error raised, whether or not it landed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

import agent_broker.client as server_client
import agent_broker.client.errors as server_errors
import agent_broker_client
import agent_broker_client.errors
from agent_broker.pricing import DEAL_FEE_MICRO, POSTING_FEE_MICRO
from agent_broker_client import AsyncClient, Client, Conflict, ProblemError
from tests.support.accounts import fund
from tests.support.market import FUNDS, LISTING


class DroppingTransport(httpx.BaseTransport):
    """Sends every request to the server, but loses the answer of the first one `drops`
    selects (the request has landed; the caller sees a broken connection)."""

    def __init__(self, drops: Callable[[httpx.Request], bool]) -> None:
        self._inner = httpx.HTTPTransport()
        self._drops = drops
        self.dropped: list[httpx.Request] = []
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        response = self._inner.handle_request(request)
        if not self.dropped and self._drops(request):
            response.read()
            response.close()
            self.dropped.append(request)
            raise httpx.ReadError("connection lost before the answer", request=request)
        return response

    def close(self) -> None:
        self._inner.close()


def _agent(app, base: str, name: str, drops: Callable[[httpx.Request], bool]):
    transport = DroppingTransport(drops)
    client = Client(base, http=httpx.Client(base_url=base, transport=transport), backoff_seconds=0)
    client.register()
    client.set_contact(name, "ops@agents.dev")
    client.set_route(f"https://agents.dev/{name}/", "JSONRPC")
    fund(app, client.account().account_id, FUNDS, real_money=True)
    return client, transport


def _to(method: str, suffix: str) -> Callable[[httpx.Request], bool]:
    return lambda request: request.method == method and request.url.path.endswith(suffix)


def _sent(transport: DroppingTransport, method: str, suffix: str) -> list[httpx.Request]:
    return [r for r in transport.sent if r.method == method and r.url.path.endswith(suffix)]


def test_lost_answers_double_no_offer_rating_or_dispute_and_keyed_calls_are_resent(
    app, live_server
):
    seller, seller_wire = _agent(app, live_server, "seller", _to("POST", "/offers"))
    buyer, buyer_wire = _agent(app, live_server, "buyer", _to("POST", "/ratings"))
    try:
        # A keyed write whose answer is lost: resent with the same key, charged once.
        listing_wire = DroppingTransport(_to("POST", "/v1/listings"))
        with Client(
            live_server,
            seller.api_key,
            http=httpx.Client(base_url=live_server, transport=listing_wire),
            backoff_seconds=0,
        ) as poster:
            listing = poster.post_listing(**LISTING)
        posted = _sent(listing_wire, "POST", "/v1/listings")
        assert len(posted) == 2 and listing_wire.dropped == posted[:1]
        assert posted[0].headers["Idempotency-Key"] == posted[1].headers["Idempotency-Key"]
        assert [item.id for item in buyer.feed(q="deduplicate").listings] == [listing.id]

        thread = buyer.open_thread(listing.id, "2 days, as listed")
        # The seller's counter lands, its answer is lost: raised, not sent again.
        with pytest.raises(httpx.ReadError):
            seller.offer(thread.id, "3 days")
        assert len(_sent(seller_wire, "POST", "/offers")) == 1
        landed = seller.thread(thread.id)
        assert (landed.turn, landed.diff) == ("negotiator", "3 days")
        buyer.offer(thread.id, "3 days, agreed")
        sealed = seller.finalize(thread.id)

        with pytest.raises(httpx.ReadError):
            buyer.rate(sealed.id, 5, delivered=True)
        assert len(_sent(buyer_wire, "POST", "/ratings")) == 1
        with pytest.raises(Conflict) as again:  # it had landed: once, not twice
            buyer.rate(sealed.id, 5, delivered=True)
        assert again.value.reason == "duplicate_rating"

        dispute_wire = DroppingTransport(_to("POST", "/dispute"))
        with Client(
            live_server,
            seller.api_key,
            http=httpx.Client(base_url=live_server, transport=dispute_wire),
            backoff_seconds=0,
        ) as disputer:
            with pytest.raises(httpx.ReadError):
                disputer.dispute(sealed.id)
            assert len(_sent(dispute_wire, "POST", "/dispute")) == 1
            with pytest.raises(Conflict) as twice:
                disputer.dispute(sealed.id)
            assert twice.value.reason == "duplicate_dispute"

        assert seller.account().balance_micro == FUNDS - POSTING_FEE_MICRO - DEAL_FEE_MICRO
    finally:
        seller.close_client()
        buyer.close_client()


def _mock(answers: list[int | Exception], body: dict | None = None):
    """A transport answering, request by request, the statuses (or raising the errors)
    of `answers`; the last one repeats."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        outcome = answers[min(len(sent), len(answers)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return httpx.Response(outcome, json=body or {"reason": "internal_error", "detail": "x"})

    return httpx.MockTransport(answer), sent


def _client(transport: httpx.MockTransport) -> Client:
    base = "http://broker.test"
    return Client(
        base, "ab_key", http=httpx.Client(base_url=base, transport=transport), backoff_seconds=0
    )


@pytest.mark.parametrize(
    ("send", "path"),
    [
        (lambda c: c.offer("t1", "3 days"), "/v1/threads/t1/offers"),
        (lambda c: c.rate("d1", 5), "/v1/deals/d1/ratings"),
        (lambda c: c.dispute("d1"), "/v1/deals/d1/dispute"),
        (lambda c: c.set_webhook("https://agents.dev/hook"), "/v1/account/webhook"),
        (lambda c: c.set_contact("Ops", "ops@agents.dev"), "/v1/account/contact"),
        (lambda c: c.buy_credits(2, "processor_a"), "/dashboard/credits"),
        (lambda c: c.verify_domain(), "/v1/account/domain/verify"),
        (lambda c: c.test_certification(), "/v1/account/certification/test"),
    ],
)
def test_an_unkeyed_write_is_sent_once_on_a_5xx_or_a_broken_connection(send, path):
    transport, sent = _mock([503, 200])
    with _client(transport) as client, pytest.raises(ProblemError) as failed:
        send(client)
    assert failed.value.status == 503 and [r.url.path for r in sent] == [path]
    transport, sent = _mock([httpx.ConnectError("refused"), 200])
    with _client(transport) as client, pytest.raises(httpx.ConnectError):
        send(client)
    assert len(sent) == 1


@pytest.mark.parametrize("send", [lambda c: c.close("t1"), lambda c: c.subscribe_certification()])
def test_reads_and_keyed_writes_are_retried_with_the_same_key(send):
    transport, sent = _mock([httpx.ReadError("lost"), 502, 200], {"events": [], "next": None})
    with _client(transport) as client:
        assert client.events_page().events == []
    assert len(sent) == 3
    transport, sent = _mock([503, 503, 503])
    with _client(transport) as client, pytest.raises(ProblemError):
        send(client)
    assert len(sent) == 3
    assert len({r.headers["Idempotency-Key"] for r in sent}) == 1


def test_the_server_package_names_are_the_client_s():
    """agent_broker.client is the standalone client under its former names, not a copy."""
    for name in server_client.__all__:
        assert getattr(server_client, name) is getattr(agent_broker_client, name), name
    assert server_errors.problem_of is agent_broker_client.errors.problem_of


def test_the_asyncio_client_follows_the_same_rule():
    async def scenario() -> tuple[int, int]:
        offers: list[httpx.Request] = []
        reads: list[httpx.Request] = []

        def answer(request: httpx.Request) -> httpx.Response:
            if request.method == "POST":
                offers.append(request)
                raise httpx.ReadError("lost")
            reads.append(request)
            if len(reads) == 1:
                return httpx.Response(503, json={"reason": "internal_error", "detail": "x"})
            return httpx.Response(200, json={"events": [], "next": None})

        base = "http://broker.test"
        http = httpx.AsyncClient(base_url=base, transport=httpx.MockTransport(answer))
        async with AsyncClient(base, "ab_key", http=http, backoff_seconds=0) as client:
            with pytest.raises(httpx.ReadError):
                await client.offer("t1", "3 days")
            await client.events_page()
        await http.aclose()
        return len(offers), len(reads)

    assert asyncio.run(scenario()) == (1, 2)
