from __future__ import annotations

from datetime import timedelta

import pytest

from agent_broker import clock
from tests.support.accounts import balance_and_held, complete_profile, fund, register
from tests.support.http import assert_problem
from tests.support.market import DEAL_FEE, FEE, dispute, post, rate, seal


def _facets(client, agent):
    return client.get("/v1/account", headers=agent.headers).json()["reputation"]


@pytest.fixture
def deal(client, market) -> str:
    return seal(client, market.poster, market.opener, market.listing_id)


def test_sealing_counts_a_finalized_deal_in_each_partys_role(client, market, deal):
    # A sell listing: the poster sold, the opener bought.
    assert _facets(client, market.poster)["seller"]["finalized_count"] == 1
    assert _facets(client, market.poster)["buyer"]["finalized_count"] == 0
    assert _facets(client, market.opener)["buyer"]["finalized_count"] == 1
    assert _facets(client, market.opener)["seller"]["finalized_count"] == 0


def test_a_rating_lands_in_the_ratees_facet_for_their_role(client, market, deal):
    response = rate(client, market.opener, deal, score=4, delivered=True)
    assert response.status_code == 201
    assert response.content == b""
    seller = _facets(client, market.poster)["seller"]
    assert (seller["rating_sum"], seller["rating_count"], seller["non_delivery_count"]) == (9, 2, 0)
    assert _facets(client, market.poster)["buyer"]["rating_count"] == 1  # roles never pooled
    rate(client, market.poster, deal, score=2, delivered=False)
    buyer = _facets(client, market.opener)["buyer"]
    assert (buyer["rating_sum"], buyer["rating_count"], buyer["non_delivery_count"]) == (7, 2, 1)


def test_omitted_delivered_leaves_the_signal_pending(client, market, deal):
    rate(client, market.opener, deal, score=5)
    assert _facets(client, market.poster)["seller"]["non_delivery_count"] == 0


def test_one_rating_and_one_dispute_per_party(client, market, deal):
    assert rate(client, market.opener, deal, score=5).status_code == 201
    assert_problem(rate(client, market.opener, deal, score=1), 409, "duplicate_rating")
    assert _facets(client, market.poster)["seller"]["rating_sum"] == 10
    assert dispute(client, market.poster, deal).status_code == 201
    assert_problem(dispute(client, market.poster, deal), 409, "duplicate_dispute")
    assert dispute(client, market.opener, deal).status_code == 201


def test_a_dispute_moves_no_money(client, market, deal):
    before = (balance_and_held(client, market.poster), balance_and_held(client, market.opener))
    dispute(client, market.opener, deal)
    assert (
        balance_and_held(client, market.poster),
        balance_and_held(client, market.opener),
    ) == before


def test_only_parties_within_seven_days(client, market, deal):
    stranger = register(client)
    assert_problem(rate(client, stranger, deal, score=5), 403, "forbidden")
    assert_problem(dispute(client, stranger, deal), 403, "forbidden")
    assert_problem(rate(client, market.opener, "no-such-deal", score=5), 404, "not_found")
    assert_problem(dispute(client, market.opener, "no-such-deal"), 404, "not_found")
    clock.advance(timedelta(days=7))
    assert_problem(rate(client, market.opener, deal, score=5), 410, "deal_purged")
    assert_problem(dispute(client, market.opener, deal), 410, "deal_purged")


@pytest.mark.parametrize(
    "body",
    [
        {"score": 0},
        {"score": 6},
        {"score": 4.5},
        {"score": "5"},
        {},
        {"score": 5, "delivered": "yes"},
    ],
)
def test_invalid_ratings_are_400(client, market, deal, body):
    assert_problem(rate(client, market.opener, deal, **body), 400, "invalid_input")
    assert _facets(client, market.poster)["seller"]["rating_count"] == 1


def test_deals_between_unfunded_accounts_move_no_counters(app, client):
    poster, opener = register(client), register(client)
    for agent in (poster, opener):
        complete_profile(client, agent)
        fund(app, agent.account_id, FEE + 2 * DEAL_FEE)  # credit, never real money
    listing = post(client, poster).json()["id"]
    deal = seal(client, poster, opener, listing)
    assert _facets(client, poster)["seller"]["finalized_count"] == 0
    assert rate(client, opener, deal, score=1, delivered=False).status_code == 201
    assert _facets(client, poster)["seller"] == {
        "rating_sum": 5,
        "rating_count": 1,
        "finalized_count": 0,
        "non_delivery_count": 0,
    }
