from __future__ import annotations

from datetime import timedelta

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from tests.support.accounts import balance_and_held, register
from tests.support.http import assert_problem
from tests.support.market import DEAL_FEE, close, offer, open_thread


def test_turns_alternate_and_each_offer_replaces_the_diff(client, market, thread):
    assert_problem(offer(client, market.opener, thread, "again"), 409, "out_of_turn")
    countered = offer(client, market.poster, thread, "3 days, $3.00")
    assert countered.status_code == 200
    assert countered.json()["turn"] == "negotiator"
    assert countered.json()["diff"] == "3 days, $3.00"
    assert_problem(offer(client, market.poster, thread, "twice"), 409, "out_of_turn")
    replied = offer(client, market.opener, thread, "Deal at $3.00")
    assert replied.json()["turn"] == "poster"
    assert replied.json()["diff"] == "Deal at $3.00"


def test_offers_are_scanned_and_refusals_change_nothing(client, market, thread):
    assert_problem(
        offer(client, market.poster, thread, "mail me: ops@brokerbot.io"), 422, "contact_leak"
    )
    got = client.get(f"/v1/threads/{thread}", headers=market.poster.headers).json()
    assert got["turn"] == "poster"
    assert got["diff"] == "I can do it in 2 days for $2.50"


def test_strangers_cannot_see_or_move_a_thread(client, market, thread):
    stranger = register(client)
    assert_problem(client.get(f"/v1/threads/{thread}", headers=stranger.headers), 404, "not_found")
    assert_problem(offer(client, stranger, thread, "hi"), 404, "not_found")
    assert_problem(close(client, stranger, thread), 404, "not_found")
    assert_problem(client.get(f"/v1/threads/{thread}"), 401, "unauthorized")


def test_either_party_may_close_and_the_openers_hold_returns(client, market, thread):
    closed = close(client, market.poster, thread)
    assert closed.status_code == 200
    assert closed.json()["status"] == "rejected"
    assert balance_and_held(client, market.opener) == (3 * DEAL_FEE, 0)
    assert close(client, market.opener, thread).json()["status"] == "rejected"
    assert balance_and_held(client, market.opener) == (3 * DEAL_FEE, 0)  # released once
    assert_problem(offer(client, market.opener, thread, "wait"), 409, "out_of_turn")


def test_close_needs_an_idempotency_key(client, market, thread):
    response = client.post(f"/v1/threads/{thread}/close", headers=market.opener.headers)
    assert_problem(response, 400, "invalid_input")


def test_a_thread_past_its_life_is_closed_and_its_hold_lapses(app, client, market, thread):
    clock.advance(timedelta(days=7))
    got = client.get(f"/v1/threads/{thread}", headers=market.opener.headers).json()
    assert got["status"] == "closed"
    assert balance_and_held(client, market.opener) == (3 * DEAL_FEE, 0)
    assert_problem(offer(client, market.poster, thread, "late"), 410, "thread_auto_closed")
    assert_problem(close(client, market.opener, thread), 410, "thread_auto_closed")
    assert run_job(app.state.context, "expire-threads") == ("closed 1 threads past their life")
    assert client.get(f"/v1/threads/{thread}", headers=market.opener.headers).json() == got


def test_the_inbox_is_the_posters_and_mine_lists_both_sides(client, market, thread):
    inbox = client.get(f"/v1/listings/{market.listing_id}/threads", headers=market.poster.headers)
    assert inbox.status_code == 200
    assert [t["id"] for t in inbox.json()] == [thread]
    assert_problem(
        client.get(f"/v1/listings/{market.listing_id}/threads", headers=market.opener.headers),
        403,
        "forbidden",
    )
    assert_problem(
        client.get("/v1/listings/nope/threads", headers=market.poster.headers), 404, "not_found"
    )
    for agent in (market.poster, market.opener):
        mine = client.get("/v1/threads/mine", headers=agent.headers).json()
        assert [t["id"] for t in mine] == [thread]
    assert client.get("/v1/threads/mine", headers=register(client).headers).json() == []


def test_the_brake_covers_offers(make_app):
    from fastapi.testclient import TestClient

    from tests.support.market import post, trader

    app = make_app(violation_limit="2/hour")
    with TestClient(app) as client:
        poster, opener = trader(app, client), trader(app, client)
        listing = post(client, poster).json()["id"]
        thread = open_thread(client, opener, listing).json()["id"]
        for _ in range(2):
            assert_problem(offer(client, poster, thread, "t.me/fastbot"), 422, "contact_leak")
        assert_problem(offer(client, poster, thread, "fine"), 429, "too_many_violations")
