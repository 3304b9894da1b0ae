"""GET /v1/reputation/{handle}: the public record, its scorecard fed by real deals, the
lookup limit; and the counterparty record embedded in thread reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from agent_broker import clock
from agent_broker.client.verify import MemoryNonceBook, ProofVerifier
from tests.support.accounts import Agent, complete_profile, fund, handle_of, register
from tests.support.http import assert_problem
from tests.support.market import (
    DEAL_FEE,
    FEE,
    close,
    dispute,
    offer,
    open_thread,
    post,
    rate,
    seal,
    seller_with_listings,
    trader,
)
from tests.support.reputation import ALWAYS

SEEDED = {"rating_sum": 5, "rating_count": 1, "finalized_count": 0, "non_delivery_count": 0}


def lookup(client, agent: Agent) -> dict:
    response = client.get(f"/v1/reputation/{handle_of(client, agent)}")
    assert response.status_code == 200, response.text
    return response.json()


# --- the record itself ------------------------------------------------------------------------


def test_a_new_account_has_a_warm_started_record_with_only_the_always_fields(client):
    agent = register(client)
    handle = handle_of(client, agent)
    clock.advance(timedelta(seconds=7))
    before = clock.rfc3339(clock.now())
    response = client.get(f"/v1/reputation/{handle}")  # no key needed
    after = clock.rfc3339(clock.now())
    assert response.status_code == 200
    record = response.json()
    assert record["handle"] == handle
    # Read within the call (a second may tick over between the two readings).
    assert before <= record["as_of"] <= after
    assert record["seller"] == {**SEEDED, "warm_start": True}
    assert record["buyer"] == {**SEEDED, "warm_start": True}
    assert record["funded"] is False
    assert record["domain_verified"] is False
    # Certification does not exist yet: the badge fields are absent, never false.
    assert "certified" not in record and "certified_checked_on" not in record
    card = record["scorecard"]
    assert set(card) == ALWAYS
    assert card["completed_deals"] == card["rated_deals"] == card["disputes"] == 0
    assert card["score_distribution"] == [0, 0, 0, 0, 0]
    assert card["verified_capability_list"] == []
    assert card["rates_suppressed"] is True
    assert card["min_rated_deals"] == 5
    assert card["evidence_backed"] is True
    assert card["tenure_days"] == 0


def test_the_record_reports_real_funding(app, client):
    agent = register(client)
    fund(app, agent.account_id, FEE)  # an operator's grant is not real money
    assert lookup(client, agent)["funded"] is False
    fund(app, agent.account_id, FEE, real_money=True)
    assert lookup(client, agent)["funded"] is True


@pytest.mark.parametrize(
    "handle",
    ["0123456789ab", "0123456789AB", "0123456789a", "0123456789abc", "g123456789ab", "x" * 300],
)
def test_unknown_and_malformed_handles_are_both_404(client, handle):
    assert_problem(client.get(f"/v1/reputation/{handle}"), 404, "not_found")


def test_a_handle_in_another_case_is_not_the_account(client):
    handle = handle_of(client, register(client))
    if handle.upper() != handle:
        assert_problem(client.get(f"/v1/reputation/{handle.upper()}"), 404, "not_found")


def test_lookups_are_limited_to_600_per_hour_per_source(client):
    handle = handle_of(client, register(client))
    for n in range(600):
        # Misses count too, so handles cannot be enumerated for free.
        path = f"/v1/reputation/{handle}" if n % 2 else "/v1/reputation/000000000000"
        assert client.get(path).status_code in (200, 404)
    refused = client.get(f"/v1/reputation/{handle}")
    problem = assert_problem(refused, 429, "rate_limited")
    assert int(refused.headers["Retry-After"]) == problem["retryAfterSeconds"] > 0


def test_the_lookup_limit_is_per_source(make_app):
    app = make_app(trusted_proxies="10.0.0.0/8")
    proxy = ("10.0.0.7", 40000)  # a trusted load balancer in front of two clients
    with TestClient(app, raise_server_exceptions=False, client=proxy) as client:
        for _ in range(600):
            client.get("/v1/reputation/000000000000", headers={"X-Forwarded-For": "203.0.113.1"})
        blocked = client.get(
            "/v1/reputation/000000000000", headers={"X-Forwarded-For": "203.0.113.1"}
        )
        assert_problem(blocked, 429, "rate_limited")
        other = client.get(
            "/v1/reputation/000000000000", headers={"X-Forwarded-For": "203.0.113.2"}
        )
        assert_problem(other, 404, "not_found")


# --- the scorecard fed by deals, ratings and disputes ------------------------------------------


def test_a_sealed_funded_deal_moves_both_records(app, client, market):
    clock.advance(timedelta(days=3))  # the accounts are 3 days old at the seal
    deal = seal(client, market.poster, market.opener, market.listing_id)
    seller = lookup(client, market.poster)
    assert seller["seller"]["finalized_count"] == 1
    assert seller["seller"]["warm_start"] is False
    assert seller["buyer"]["warm_start"] is True  # roles never pooled
    card = seller["scorecard"]
    assert card["completed_deals"] == 1
    assert card["distinct_counterparties"] == 1
    assert card["trading_days"] == 0  # first traded today: present, and zero
    assert card["days_since_last_activity"] == 0
    assert card["tenure_days"] == 3
    assert card["rating_coverage_bp"] == 0
    assert card["dispute_rate_bp"] == 0
    assert "average_rating_hundredths" not in card and "delivery_rate_bp" not in card
    assert "median_rating_latency" not in card
    buyer = lookup(client, market.opener)
    assert buyer["buyer"]["finalized_count"] == 1
    assert buyer["scorecard"]["completed_deals"] == 1

    clock.advance(timedelta(hours=2))
    assert rate(client, market.opener, deal, score=4, delivered=True).status_code == 201
    assert dispute(client, market.opener, deal).status_code == 201
    card = lookup(client, market.poster)["scorecard"]
    assert card["rated_deals"] == 1
    assert card["score_distribution"] == [0, 0, 0, 1, 0]
    assert card["median_rating_latency"] == "1h-4h"
    assert card["disputes"] == 1
    assert card["dispute_rate_bp"] == 10_000
    assert card["rating_coverage_bp"] == 10_000
    # Filing a claim or rating is not a claim against the filer.
    assert lookup(client, market.opener)["scorecard"]["disputes"] == 0

    clock.advance(timedelta(days=10))
    card = lookup(client, market.poster)["scorecard"]
    assert card["trading_days"] == 10
    assert card["days_since_last_activity"] == 10
    assert card["tenure_days"] == 13


def test_the_same_counterparty_twice_counts_once(app, client):
    poster, listings = seller_with_listings(app, client, 2)
    opener = trader(app, client, amount=2 * DEAL_FEE)
    for listing in listings:
        seal(client, poster, opener, listing)
    card = lookup(client, poster)["scorecard"]
    assert card["completed_deals"] == 2
    assert card["distinct_counterparties"] == 1


def test_a_capability_is_verified_by_three_sealed_sales_in_its_category(app, client):
    poster, listings = seller_with_listings(app, client, 5, category="translation")
    for listing in listings[:2]:
        seal(client, poster, trader(app, client), listing)
    assert lookup(client, poster)["scorecard"]["verified_capability_list"] == []
    seal(client, poster, trader(app, client), listings[2])
    card = lookup(client, poster)["scorecard"]
    assert card["verified_capabilities"] == 1
    assert card["verified_capability_list"] == ["translation"]


def test_purchases_do_not_verify_a_capability(app, client):
    # The poster of buy listings is the buyer: three sealed purchases verify nothing.
    poster, listings = seller_with_listings(app, client, 3, listing_type="buy")
    for listing in listings:
        seal(client, poster, trader(app, client), listing)
    assert lookup(client, poster)["scorecard"]["verified_capability_list"] == []
    assert lookup(client, poster)["buyer"]["finalized_count"] == 3


def test_an_unfunded_pair_seals_but_moves_no_counters(app, client):
    poster = register(client)
    complete_profile(client, poster)
    fund(app, poster.account_id, FEE + DEAL_FEE)  # operator credit, not real money
    listing = post(client, poster).json()["id"]
    opener = register(client)
    complete_profile(client, opener)
    fund(app, opener.account_id, DEAL_FEE)
    deal = seal(client, poster, opener, listing)
    assert rate(client, opener, deal, score=1, delivered=False).status_code == 201
    assert dispute(client, opener, deal).status_code == 201
    record = lookup(client, poster)
    assert record["seller"] == {**SEEDED, "warm_start": True}
    card = record["scorecard"]
    assert (card["completed_deals"], card["distinct_counterparties"], card["disputes"]) == (0, 0, 0)
    assert card["score_distribution"] == [0, 0, 0, 0, 0]
    assert "trading_days" not in card and "median_rating_latency" not in card
    # Liveness is not a counter: the billable seal still shows the account active.
    assert card["days_since_last_activity"] == 0


def test_posting_a_listing_is_activity(app, client):
    agent = register(client)
    fund(app, agent.account_id, FEE)
    assert "days_since_last_activity" not in lookup(client, agent)["scorecard"]
    assert post(client, agent).status_code == 201
    clock.advance(timedelta(days=2, hours=1))
    assert lookup(client, agent)["scorecard"]["days_since_last_activity"] == 2


def test_five_rated_deals_with_distinct_accounts_unsuppress_the_rates(app, client):
    poster, listings = seller_with_listings(app, client, 5, category="research")
    scores = [5, 4, 5, 3, 5]
    for n, (listing, score) in enumerate(zip(listings, scores, strict=True)):
        buyer = trader(app, client)
        deal = seal(client, poster, buyer, listing)
        clock.advance(timedelta(minutes=20))
        delivered = n != 3  # one buyer flags non-delivery
        assert rate(client, buyer, deal, score=score, delivered=delivered).status_code == 201
        if n < 4:
            card = lookup(client, poster)["scorecard"]
            assert card["rates_suppressed"] is True
            assert "average_rating_hundredths" not in card
    record = lookup(client, poster)
    assert record["seller"] == {
        "rating_sum": 5 + sum(scores),
        "rating_count": 6,
        "finalized_count": 5,
        "non_delivery_count": 1,
        "warm_start": False,
    }
    card = record["scorecard"]
    assert card["rates_suppressed"] is False
    assert card["rated_deals"] == 5
    assert card["completed_deals"] == 5
    assert card["distinct_counterparties"] == 5
    assert card["average_rating_hundredths"] == 440  # 22 / 5
    assert card["delivery_rate_bp"] == 8_000
    assert card["rating_coverage_bp"] == 10_000
    assert card["score_distribution"] == [0, 0, 1, 1, 3]
    assert card["median_rating_latency"] == "<1h"
    assert card["verified_capability_list"] == ["research"]

    # A relying party asks for a proof and verifies it against the service's own keys.
    nonces = MemoryNonceBook()
    nonce = nonces.issue()
    minted = client.post(
        "/v1/account/reputation/attestation",
        headers=poster.headers,
        json={"nonce": nonce, "audience": "https://RP.example:443"},
    )
    assert minted.status_code == 200, minted.text
    relying_party = ProofVerifier(
        service_base_url="https://broker.test",  # the test app's public base URL
        audience="https://rp.example",
        nonces=nonces,
        http=client,
    )
    proven = relying_party.verify(minted.json()["attestation"], nonce=nonce)
    expected = {k: v for k, v in record.items() if k not in ("scorecard", "as_of")}
    assert {k: v for k, v in proven.record.items() if k != "as_of"} == expected
    assert proven.claims["aud"] == "https://rp.example"


# --- the counterparty record in thread reads ---------------------------------------------------


def test_thread_reads_embed_the_other_partys_record_and_writes_do_not(app, client, market):
    opened = open_thread(client, market.opener, market.listing_id)
    assert "counterparty" not in opened.json()
    thread = opened.json()["id"]
    answered = offer(client, market.poster, thread, "Deal at $2.40")
    assert answered.status_code == 200 and "counterparty" not in answered.json()

    opener_handle = handle_of(client, market.opener)
    poster_handle = handle_of(client, market.poster)
    opener_record = lookup(client, market.opener)
    expected_for_poster = {k: v for k, v in opener_record.items() if k not in ("handle", "as_of")}

    seen_by_poster = client.get(f"/v1/threads/{thread}", headers=market.poster.headers).json()
    assert seen_by_poster["counterparty"] == expected_for_poster
    seen_by_opener = client.get(f"/v1/threads/{thread}", headers=market.opener.headers).json()
    assert seen_by_opener["counterparty"]["funded"] is True
    assert set(seen_by_opener["counterparty"]) == {
        "seller",
        "buyer",
        "escrow",
        "funded",
        "domain_verified",
        "scorecard",
    }

    inbox = client.get(
        f"/v1/listings/{market.listing_id}/threads", headers=market.poster.headers
    ).json()
    assert [entry["counterparty"] for entry in inbox] == [expected_for_poster]
    mine = client.get("/v1/threads/mine", headers=market.opener.headers).json()
    assert mine[0]["counterparty"] == seen_by_opener["counterparty"]

    # Nothing in any read identifies the counterparty.
    for response_text, other in (
        (client.get(f"/v1/threads/{thread}", headers=market.poster.headers).text, market.opener),
        (client.get(f"/v1/threads/{thread}", headers=market.opener.headers).text, market.poster),
        (client.get("/v1/threads/mine", headers=market.poster.headers).text, market.opener),
    ):
        assert other.account_id not in response_text
        assert (opener_handle if other is market.opener else poster_handle) not in response_text
        assert "agents.dev" not in response_text  # neither route nor contact

    closed = close(client, market.opener, thread)
    assert closed.status_code == 200 and "counterparty" not in closed.json()


def test_the_counterparty_record_follows_the_deal_history(app, client, market):
    first = open_thread(client, market.opener, market.listing_id).json()["id"]
    before = client.get(f"/v1/threads/{first}", headers=market.opener.headers).json()
    assert before["counterparty"]["seller"]["warm_start"] is True
    seal(client, market.poster, trader(app, client), post(client, market.poster).json()["id"])
    after = client.get(f"/v1/threads/{first}", headers=market.opener.headers).json()
    assert after["counterparty"]["seller"]["finalized_count"] == 1
    assert after["counterparty"]["scorecard"]["completed_deals"] == 1
