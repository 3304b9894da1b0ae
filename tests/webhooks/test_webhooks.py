"""Events to agents: an account sets its endpoint and gets a Standard Webhooks secret; what
happens to its threads and deals is written to an outbox in the same transaction and
delivered by the `deliver-webhooks` job through the guarded client to a local HTTPS
receiver, which checks every signature with the standardwebhooks library. A receiver that
is down gets every event once it returns, in order per thread; thread events never name
the counterparty."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from agent_broker.webhooks.models import WebhookEndpoint, WebhookEvent
from tests.support.accounts import register
from tests.support.http import assert_problem, new_key
from tests.support.market import close, offer, open_thread, trader
from tests.support.tls import Answer
from tests.support.webhooks import HOOK, accept, deliver, deliveries, set_endpoint


def _types(events: list[dict], kind: str) -> list[str]:
    return [e["type"] for e in events if e["type"].startswith(kind)]


def test_setting_and_removing_the_endpoint(client, market):
    first = set_endpoint(client, market.poster)
    assert set_endpoint(client, market.poster) != first  # a new secret on every PUT
    bad = client.put(
        "/v1/account/webhook", json={"url": "http://agents.dev/hook"}, headers=market.poster.headers
    )
    assert_problem(bad, 400, "invalid_input")
    assert client.delete("/v1/account/webhook", headers=market.poster.headers).status_code == 204
    assert_problem(client.put("/v1/account/webhook", json={"url": "x"}), 401, "unauthorized")


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("https://user:pw@agents.dev/hook", "credentials"),
        ("https://user@agents.dev/hook", "credentials"),
        ("http://agents.dev/hook", "https"),
        ("ftp://agents.dev/hook", "https"),
        ("agents.dev/hook", "https"),
        ("https:///hook", "host"),
        ("https://agents.dev/hook?token=abc", "query"),
        ("https://agents.dev/hook#events", "fragment"),
        ("https://localhost/hook", "localhost"),
        ("https://events.localhost/hook", "localhost"),
        ("https://127.0.0.1/hook", "IP address"),
        ("https://10.0.0.7:8443/hook", "IP address"),
        ("https://[::1]/hook", "IP address"),
        ("https://2130706433/hook", "IP address"),
        ("https://0x7f.1/hook", "IP address"),
        ("https://agents.dev:0/hook", "port"),
        ("https://agents.dev/" + "h" * 2048, "2048"),
    ],
)
def test_an_endpoint_that_is_not_a_public_https_url_is_refused(app, client, url, named):
    agent = register(client)

    response = client.put("/v1/account/webhook", json={"url": url}, headers=agent.headers)

    body = assert_problem(response, 400, "invalid_input")
    assert named in body["detail"], body["detail"]
    with app.state.context.db.reader() as session:
        assert session.get(WebhookEndpoint, agent.account_id) is None


@pytest.mark.parametrize(
    "url",
    ["https://agents.dev/hook", "https://events.agents.dev:8443/v1/in/", "https://agents.dev"],
)
def test_a_public_https_endpoint_is_accepted_as_sent(client, url):
    agent = register(client)

    response = client.put("/v1/account/webhook", json={"url": url}, headers=agent.headers)

    assert response.status_code == 200, response.text
    assert response.json()["url"] == url


def test_a_deal_s_events_reach_both_sides_signed(app, client, challenge_server, market):
    accept(challenge_server, "/poster")
    accept(challenge_server, "/opener")
    poster_secret = set_endpoint(client, market.poster, "/poster")
    opener_secret = set_endpoint(client, market.opener, "/opener")
    thread = open_thread(client, market.opener, market.listing_id).json()
    assert offer(client, market.poster, thread["id"], "3 days").status_code == 200
    assert offer(client, market.opener, thread["id"], "3 days, agreed").status_code == 200
    sealed = client.post(
        f"/v1/threads/{thread['id']}/finalize",
        headers={**market.poster.headers, "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201, sealed.text
    deal_id = sealed.json()["id"]
    rated = client.post(
        f"/v1/deals/{deal_id}/ratings", json={"score": 4}, headers=market.opener.headers
    )
    assert rated.status_code == 201
    assert (
        client.post(f"/v1/deals/{deal_id}/dispute", headers=market.poster.headers).status_code
        == 201
    )
    assert deliver(app).startswith("delivered 7 webhook events")

    to_poster = deliveries(challenge_server, poster_secret, "/poster")
    to_opener = deliveries(challenge_server, opener_secret, "/opener")
    # In order per thread and per deal (the two go side by side).
    assert _types(to_poster, "thread") == ["thread.opened", "thread.offer"]
    assert _types(to_poster, "deal") == ["deal.sealed", "deal.rated"]
    assert _types(to_opener, "thread") == ["thread.offer"]
    assert _types(to_opener, "deal") == ["deal.sealed", "deal.disputed"]
    opened = next(e["data"] for e in to_poster if e["type"] == "thread.opened")
    assert opened["thread_id"] == thread["id"] and opened["turn"] == "poster"
    rating = next(e["data"] for e in to_poster if e["type"] == "deal.rated")
    assert rating == {"deal_id": deal_id, "score": 4, "delivered": None}
    assert all(e["data"]["deal_id"] == deal_id for e in to_opener if e["type"].startswith("deal"))
    # Before the seal nothing names the other side.
    for event in [e for e in to_poster + to_opener if e["type"].startswith("thread")]:
        text = json.dumps(event)
        for agent in (market.poster, market.opener):
            assert agent.account_id not in text
    # Delivered once: a second run has nothing to send.
    assert deliver(app).startswith("delivered 0")


def test_an_account_without_an_endpoint_gets_no_events(app, client, market):
    open_thread(client, market.opener, market.listing_id)
    with app.state.context.db.reader() as session:
        assert session.scalars(select(WebhookEvent)).all() == []


def test_a_receiver_that_was_down_gets_every_event_in_order(app, client, challenge_server, market):
    challenge_server.answer(HOOK, Answer(status=503))
    secret = set_endpoint(client, market.poster)
    thread = open_thread(client, market.opener, market.listing_id).json()
    offer(client, market.poster, thread["id"], "first")
    offer(client, market.opener, thread["id"], "second")
    offer(client, market.poster, thread["id"], "third")
    offer(client, market.opener, thread["id"], "fourth")
    # Down: only the thread's first event is tried (the rest wait behind it), and retried later.
    assert "delivered 0 webhook events, 1 attempts failed" in deliver(app)
    assert deliver(app).startswith("delivered 0 webhook events, 0")  # backing off
    clock.advance(timedelta(seconds=11))
    assert "1 attempts failed" in deliver(app)
    with app.state.context.db.reader() as session:
        head = session.scalars(select(WebhookEvent).order_by(WebhookEvent.sequence)).first()
        assert head.attempts == 2 and "503" in head.last_error
    # Back up: after the backoff every event goes, in order, in one run.
    refused = len(challenge_server.seen)
    accept(challenge_server)
    clock.advance(timedelta(seconds=21))
    assert deliver(app).startswith("delivered 3 webhook events")
    received = deliveries(challenge_server, secret, since=refused)
    assert [e["type"] for e in received] == ["thread.opened", "thread.offer", "thread.offer"]
    assert [e["data"]["diff"] for e in received[1:]] == ["second", "fourth"]


def test_competing_and_expired_threads_tell_their_openers(app, client, challenge_server, market):
    accept(challenge_server, "/rival")
    accept(challenge_server, "/opener")
    rival = trader(app, client)
    rival_secret = set_endpoint(client, rival, "/rival")
    opener_secret = set_endpoint(client, market.opener, "/opener")
    won = open_thread(client, market.opener, market.listing_id).json()
    lost = open_thread(client, rival, market.listing_id).json()
    offer(client, market.poster, won["id"], "deal")
    offer(client, market.opener, won["id"], "deal, agreed")
    sealed = client.post(
        f"/v1/threads/{won['id']}/finalize",
        headers={**market.poster.headers, "Idempotency-Key": new_key()},
    )
    assert sealed.status_code == 201
    deliver(app)
    (closed,) = deliveries(challenge_server, rival_secret, "/rival")
    assert closed["type"] == "thread.auto_closed"
    assert (
        closed["data"]["thread_id"] == lost["id"] and closed["data"]["reason"] == "sealed_elsewhere"
    )
    # A thread's and a deal's events are two subjects, sent side by side: either may land
    # first (the order holds within one subject).
    told = sorted(e["type"] for e in deliveries(challenge_server, opener_secret, "/opener"))
    assert told == ["deal.sealed", "thread.offer"]


def test_an_expired_thread_tells_both_parties(app, client, challenge_server, market):
    accept(challenge_server)
    secret = set_endpoint(client, market.opener)
    thread = open_thread(client, market.opener, market.listing_id).json()
    clock.advance(timedelta(days=8))
    assert run_job(app.state.context, "expire-threads") == ("closed 1 threads past their life")
    deliver(app)
    (event,) = deliveries(challenge_server, secret)
    assert event["type"] == "thread.auto_closed"
    assert event["data"]["thread_id"] == thread["id"] and event["data"]["reason"] == "expired"


def test_a_closed_thread_tells_the_other_party(app, client, challenge_server, market):
    accept(challenge_server)
    secret = set_endpoint(client, market.opener)
    thread = open_thread(client, market.opener, market.listing_id).json()
    assert close(client, market.poster, thread["id"]).status_code == 200
    deliver(app)
    (event,) = deliveries(challenge_server, secret)
    assert event["type"] == "thread.closed" and event["data"]["status"] == "rejected"


@pytest.mark.parametrize(
    "answer", [Answer(status=500), Answer(status=302, headers={"Location": "https://agents.dev/x"})]
)
def test_a_failed_delivery_is_retried_with_backoff_and_given_up_at_last(
    app, client, challenge_server, market, answer, monkeypatch
):
    from agent_broker.webhooks import delivery

    monkeypatch.setattr(delivery, "MAX_ATTEMPTS", 3)
    challenge_server.answer(HOOK, answer)
    set_endpoint(client, market.poster)
    open_thread(client, market.opener, market.listing_id)
    for wait in (0, 11, 21):
        clock.advance(timedelta(seconds=wait))
        deliver(app)
    with app.state.context.db.reader() as session:
        (event,) = session.scalars(select(WebhookEvent)).all()
    assert event.attempts == 3 and event.failed_at is not None and event.delivered_at is None
    assert delivery.backoff(1) == timedelta(seconds=10)
    assert delivery.backoff(20) == timedelta(hours=1)


def _one_good_one_broken(client, challenge_server, market):  # noqa: ANN001, ANN202
    """The poster's endpoint accepts; the opener's is broken. One event is due for each."""
    accept(challenge_server, "/poster")
    poster_secret = set_endpoint(client, market.poster, "/poster")
    set_endpoint(client, market.opener, "/opener")
    thread = open_thread(client, market.opener, market.listing_id).json()
    assert offer(client, market.poster, thread["id"], "3 days").status_code == 200
    return poster_secret


def _delivered_once_each_run(app, challenge_server, poster_secret):  # noqa: ANN001, ANN202
    assert deliver(app) == "delivered 1 webhook events, 1 attempts failed"
    assert len(deliveries(challenge_server, poster_secret, "/poster")) == 1
    clock.advance(timedelta(seconds=11))  # the failed one is due again; the other is done
    assert deliver(app) == "delivered 0 webhook events, 1 attempts failed"
    assert len(deliveries(challenge_server, poster_secret, "/poster")) == 1
    with app.state.context.db.reader() as session:
        attempts = sorted(e.attempts for e in session.scalars(select(WebhookEvent)))
    assert attempts == [1, 2]


def test_a_tls_fault_at_one_endpoint_is_its_own_failed_attempt(
    app, client, challenge_server, market
):
    poster_secret = _one_good_one_broken(client, challenge_server, market)
    challenge_server.answer("/opener", Answer(break_tls=True))
    _delivered_once_each_run(app, challenge_server, poster_secret)


def test_any_fault_in_one_delivery_is_its_own_failed_attempt(
    app, client, challenge_server, market, monkeypatch
):
    from agent_broker.http.outbound import OutboundClient

    poster_secret = _one_good_one_broken(client, challenge_server, market)
    real = OutboundClient.request

    async def faulty(self, method, url, **kwargs):  # noqa: ANN001, ANN202
        if url.endswith("/opener"):
            raise RuntimeError("a fault no refusal names")
        return await real(self, method, url, **kwargs)

    monkeypatch.setattr(OutboundClient, "request", faulty)
    _delivered_once_each_run(app, challenge_server, poster_secret)
