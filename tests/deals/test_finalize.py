from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from agent_broker.ledger.models import JournalEntry
from tests.support.accounts import balance_and_held, register
from tests.support.http import assert_problem, new_key
from tests.support.market import DEAL_FEE, close, finalize, offer, open_thread, trader


def _deal_fees(app) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(
            select(func.count()).select_from(JournalEntry).where(JournalEntry.kind == "deal_fee")
        )


def test_finalize_seals_the_deal_and_captures_both_fees(app, client, market, thread):
    poster_before = balance_and_held(client, market.poster)
    response = finalize(client, market.poster, thread)
    assert response.status_code == 201, response.text
    deal = response.json()
    assert deal["amount_micro"] == DEAL_FEE
    assert deal["status"] == "revealed"
    sealed = datetime.fromisoformat(deal["created_at"].replace("Z", "+00:00"))
    purge = datetime.fromisoformat(deal["purge_at"].replace("Z", "+00:00"))
    assert deal["reveal_at"] == deal["created_at"]
    assert purge - sealed == timedelta(days=7)
    assert balance_and_held(client, market.opener) == (2 * DEAL_FEE, 0)
    assert balance_and_held(client, market.poster) == (poster_before[0] - DEAL_FEE, 0)
    assert _deal_fees(app) == 2
    got = client.get(f"/v1/threads/{thread}", headers=market.opener.headers).json()
    assert got["status"] == "finalized"
    listing = client.get(f"/v1/listings/{market.listing_id}", headers=market.opener.headers)
    assert listing.json()["status"] == "matched"
    assert "expires_at" not in listing.json()


def test_the_reveal_is_mirror_imaged(client, market, thread):
    poster_view = finalize(client, market.poster, thread).json()
    deal_id = poster_view["id"]
    opener_view = client.get(f"/v1/deals/{deal_id}", headers=market.opener.headers).json()
    assert client.get(f"/v1/deals/{deal_id}", headers=market.poster.headers).json() == poster_view
    for view in (poster_view, opener_view):
        reveal = view["reveal"]
        assert reveal["counterparty_contact"] == {
            "contact_name": "Ops Team",
            "contact_email": "ops@agents.dev",
        }
        assert reveal["counterparty_endpoint"] == "https://agents.dev/deals/" + view["route"]
        assert reveal["counterparty_interface"] == {
            "url": reveal["counterparty_endpoint"],
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
        assert "counterparty_agent_card_url" not in reveal
        assert reveal["credential"] == view["credential"]
        assert reveal["credential_kid"] == view["credential_kid"]
        assert reveal["credential_presentation"] == {
            "header": "Authorization",
            "scheme": "Bearer",
            "type": "http",
            "securityScheme": "bearer",
        }
    # Each side gets the other's route hash and its own credential.
    assert poster_view["route"] != opener_view["route"]
    assert poster_view["credential"] != opener_view["credential"]


def test_interface_and_card_follow_what_the_counterparty_declared(client, market, thread):
    client.put(
        "/v1/account/route",
        headers=market.opener.headers,
        json={
            "deal_route": "https://negotiator.dev/r",
            "agent_card_url": "https://negotiator.dev/.well-known/agent-card.json",
        },
    )
    reveal = finalize(client, market.poster, thread).json()["reveal"]
    assert "counterparty_interface" not in reveal  # no binding declared
    assert reveal["counterparty_agent_card_url"] == (
        "https://negotiator.dev/.well-known/agent-card.json"
    )
    assert reveal["counterparty_endpoint"].startswith("https://negotiator.dev/r/")


def test_only_the_poster_may_finalize_and_a_refusal_moves_nothing(app, client, market, thread):
    assert_problem(finalize(client, market.opener, thread), 403, "forbidden")
    assert_problem(finalize(client, register(client), thread), 404, "not_found")
    assert balance_and_held(client, market.opener) == (2 * DEAL_FEE, DEAL_FEE)
    assert _deal_fees(app) == 0


def test_the_negotiator_must_have_spoken_last(client, market, thread):
    offer(client, market.poster, thread, "counter: $4")
    assert_problem(finalize(client, market.poster, thread), 409, "out_of_turn")
    offer(client, market.opener, thread, "accepted at $4")
    assert finalize(client, market.poster, thread).status_code == 201


def test_a_replay_returns_the_same_package_and_a_second_finalize_conflicts(
    app, client, market, thread
):
    key = new_key()
    first = finalize(client, market.poster, thread, key=key)
    again = finalize(client, market.poster, thread, key=key)
    assert again.status_code == 201
    assert again.json() == first.json()
    assert_problem(finalize(client, market.poster, thread), 409, "already_finalized")
    assert_problem(close(client, market.opener, thread), 409, "already_finalized")
    assert _deal_fees(app) == 2


def test_a_poster_short_of_the_fee_is_402_and_the_thread_stays_open(app, client):
    from tests.support.accounts import complete_profile, fund
    from tests.support.market import FEE, post

    poster = register(client)
    complete_profile(client, poster)
    fund(app, poster.account_id, FEE + DEAL_FEE - 1, real_money=True)
    listing = post(client, poster).json()["id"]
    opener = trader(app, client)
    thread = open_thread(client, opener, listing).json()["id"]
    assert_problem(finalize(client, poster, thread), 402, "insufficient_funds_self")
    assert client.get(f"/v1/threads/{thread}", headers=opener.headers).json()["status"] == "open"
    assert balance_and_held(client, opener) == (2 * DEAL_FEE, DEAL_FEE)
    assert _deal_fees(app) == 0


def test_competing_threads_are_auto_closed_with_holds_released(app, client, market, thread):
    rival = trader(app, client)
    other = open_thread(client, rival, market.listing_id).json()["id"]
    finalize(client, market.poster, thread)
    assert balance_and_held(client, rival) == (3 * DEAL_FEE, 0)
    got = client.get(f"/v1/threads/{other}", headers=rival.headers).json()
    assert got["status"] == "closed"
    assert_problem(offer(client, market.poster, other, "too late"), 410, "thread_auto_closed")
    assert_problem(close(client, rival, other), 410, "thread_auto_closed")
    assert_problem(open_thread(client, rival, market.listing_id), 410, "listing_expired")


def test_concurrent_finalize_calls_seal_once(app, client, market, thread, live_server):
    barrier = threading.Barrier(6)

    def attempt(_):
        barrier.wait()
        with httpx.Client(base_url=live_server, timeout=30) as http:
            return http.post(
                f"/v1/threads/{thread}/finalize",
                headers={**market.poster.headers, "Idempotency-Key": new_key()},
            )

    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(attempt, range(6)))
    assert sorted(r.status_code for r in responses) == [201] + [409] * 5
    assert _deal_fees(app) == 2
    assert balance_and_held(client, market.opener) == (2 * DEAL_FEE, 0)


def test_deals_are_for_the_parties_and_purged_after_seven_days(app, client, market, thread):
    deal = finalize(client, market.poster, thread).json()["id"]
    assert_problem(
        client.get(f"/v1/deals/{deal}", headers=register(client).headers), 404, "not_found"
    )
    assert_problem(client.get("/v1/deals/nope", headers=market.poster.headers), 404, "not_found")
    clock.advance(timedelta(days=7))
    assert_problem(
        client.get(f"/v1/deals/{deal}", headers=market.opener.headers), 410, "deal_purged"
    )
    assert run_job(app.state.context, "purge-deals") == "purged 1 deals"
    from agent_broker.deals.models import Deal

    with app.state.context.db.reader() as session:
        row = session.get(Deal, deal)
        assert row.status == "purged"
        assert row.poster_contact_email is None and row.negotiator_route is None
    assert_problem(
        client.get(f"/v1/deals/{deal}", headers=market.poster.headers), 410, "deal_purged"
    )


def test_each_sides_credential_verifies_against_the_published_key_document(client, market, thread):
    from tests.support.paseto import footer_of, verify

    poster_view = finalize(client, market.poster, thread).json()
    deal_id = poster_view["id"]
    opener_view = client.get(f"/v1/deals/{deal_id}", headers=market.opener.headers).json()
    document = client.get("/.well-known/paseto-keys.json").json()
    keys = {key["kid"]: key["public_key_hex"] for key in document["keys"]}
    for view, side in ((poster_view, "poster"), (opener_view, "negotiator")):
        token = view["credential"]
        kid = footer_of(token)["kid"]
        assert kid == view["credential_kid"]
        claims = verify(token, keys[kid])
        assert claims["typ"] == "svc.deal.v1"
        assert claims["deal_id"] == deal_id
        assert claims["bearer"] == side
        # Both sides declared routes on https://agents.dev: the audience is that origin.
        assert claims["aud"] == "https://agents.dev"
        issued = datetime.fromisoformat(claims["iat"].replace("Z", "+00:00"))
        expires = datetime.fromisoformat(claims["exp"].replace("Z", "+00:00"))
        assert expires - issued == timedelta(days=7)
    tampered = poster_view["credential"][:-8] + "AAAAAAAA"
    with pytest.raises(Exception):  # noqa: B017 - any verification failure will do
        verify(tampered, keys[poster_view["credential_kid"]])
