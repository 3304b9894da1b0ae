"""Escrow deals over HTTP: listings, the buyer's price hold, the seal, delivery, acceptance,
rejection and ruling, each step's refusals, and what the ledger journals."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry, Posting
from tests.support.accounts import balance_and_held, fund, handle_of, read_account, register
from tests.support.escrow import (
    PRICE,
    escrow_market,
    ledger_problems,
    open_priced,
    priced_offer,
    rejected,
    sealed,
    step,
)
from tests.support.http import assert_problem, new_key
from tests.support.market import DEAL_FEE, finalize, listed, post, trader

FEE_BPS = 100  # BROKER_ESCROW_FEE_BPS's default


def _book(app, code: str) -> int:
    with app.state.context.db.reader() as session:
        rows = session.scalars(select(Posting.amount_micro).where(Posting.account_code == code))
        return sum(rows)


def _entries(app, deal_id: str) -> list[str]:
    with app.state.context.db.reader() as session:
        return list(
            session.scalars(
                select(JournalEntry.kind)
                .where(JournalEntry.reference == deal_id)
                .order_by(JournalEntry.sequence)
            )
        )


# --- Listings ---------------------------------------------------------------------------


def test_an_escrow_listing_shows_its_terms_in_the_listing_and_the_feed(app, client):
    market = escrow_market(app, client, delivery_hours=24)
    evaluator = handle_of(client, market.evaluator)
    listing = client.get(f"/v1/listings/{market.listing_id}", headers=market.opener.headers)
    body = listing.json()
    assert body["settlement"] == "escrow"
    assert (body["delivery_hours"], body["acceptance_hours"]) == (24, 48)
    assert body["evaluator"] == evaluator
    feed = client.get("/v1/feed", headers=market.opener.headers).json()["listings"]
    shown = next(item for item in feed if item["id"] == market.listing_id)
    assert shown["settlement"] == "escrow" and shown["evaluator"] == evaluator


def test_a_direct_listing_is_as_before_and_takes_no_escrow_terms(app, client):
    poster = trader(app, client)
    listing_id = listed(client, poster)
    body = client.get(f"/v1/listings/{listing_id}", headers=poster.headers).json()
    assert body["settlement"] == "direct"
    assert "delivery_hours" not in body and "evaluator" not in body
    assert_problem(post(client, poster, delivery_hours=5), 400, "invalid_input")


def test_the_evaluator_must_be_a_third_account(app, client):
    poster = trader(app, client)
    own = handle_of(client, poster)
    assert_problem(post(client, poster, settlement="escrow", evaluator=own), 400, "invalid_input")
    unknown = post(client, poster, settlement="escrow", evaluator="0123456789ab")
    assert_problem(unknown, 400, "invalid_input")
    assert_problem(
        post(client, poster, settlement="escrow", delivery_hours=721), 400, "invalid_input"
    )


def test_the_operator_evaluates_when_the_listing_names_nobody(app, client):
    market = escrow_market(app, client, with_evaluator=False)
    body = client.get(f"/v1/listings/{market.listing_id}", headers=market.opener.headers).json()
    assert body["evaluator"] == "operator"


# --- Negotiation: the buyer's price hold ---------------------------------------------


def test_opening_an_escrow_sell_listing_holds_fee_and_price(app, client):
    market = escrow_market(app, client)
    thread = open_priced(client, market.opener, market.listing_id)
    assert thread.status_code == 201, thread.text
    assert thread.json()["price_micro"] == PRICE
    assert balance_and_held(client, market.opener) == (0, DEAL_FEE + PRICE)


def test_a_buyer_short_of_the_price_opens_nothing(app, client):
    market = escrow_market(app, client, buyer_funds=PRICE - 1)
    assert_problem(
        open_priced(client, market.opener, market.listing_id), 402, "insufficient_funds_self"
    )
    assert balance_and_held(client, market.opener) == (DEAL_FEE + PRICE - 1, 0)


def test_the_buyers_priced_offer_tops_the_hold_up_or_gives_back(app, client):
    market = escrow_market(app, client, buyer_funds=PRICE + 500_000)
    thread = open_priced(client, market.opener, market.listing_id).json()["id"]
    assert priced_offer(client, market.poster, thread, PRICE + 400_000).status_code == 200
    # The seller's price moves the thread's price, not the buyer's hold.
    assert balance_and_held(client, market.opener)[1] == DEAL_FEE + PRICE
    raised = priced_offer(client, market.opener, thread, PRICE + 400_000)
    assert raised.json()["price_micro"] == PRICE + 400_000
    assert balance_and_held(client, market.opener) == (100_000, DEAL_FEE + PRICE + 400_000)
    priced_offer(client, market.poster, thread, None)
    too_much = priced_offer(client, market.opener, thread, PRICE + 600_000)
    assert_problem(too_much, 402, "insufficient_funds_self")
    # Refused as a whole: the turn, the price and the hold are as they were.
    got = client.get(f"/v1/threads/{thread}", headers=market.opener.headers).json()
    assert (got["turn"], got["price_micro"]) == ("negotiator", PRICE + 400_000)
    lowered = priced_offer(client, market.opener, thread, PRICE - 1_000_000)
    assert lowered.status_code == 200
    assert balance_and_held(client, market.opener) == (1_500_000, DEAL_FEE + PRICE - 1_000_000)


def test_closing_an_escrow_thread_gives_the_price_back(app, client):
    market = escrow_market(app, client)
    thread = open_priced(client, market.opener, market.listing_id).json()["id"]
    response = client.post(
        f"/v1/threads/{thread}/close",
        headers={**market.opener.headers, "Idempotency-Key": new_key()},
    )
    assert response.status_code == 200, response.text
    assert balance_and_held(client, market.opener) == (DEAL_FEE + PRICE, 0)


def test_the_evaluator_cannot_negotiate_on_the_listing(app, client):
    market = escrow_market(app, client)
    evaluator = market.evaluator
    fund(app, evaluator.account_id, DEAL_FEE + PRICE, real_money=True)
    from tests.support.accounts import complete_profile

    complete_profile(client, evaluator)
    assert_problem(open_priced(client, evaluator, market.listing_id), 403, "forbidden")


# --- The seal ------------------------------------------------------------------------


def test_sealing_moves_the_price_into_escrow(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)
    escrow = deal["escrow"]
    assert escrow["status"] == "held" and escrow["amount_micro"] == PRICE
    assert escrow["evaluator"] == handle_of(client, market.evaluator)
    assert "accept_by" not in escrow and "ruling" not in escrow
    # The buyer's price is still theirs, held: GET /v1/account counts it.
    assert balance_and_held(client, market.opener) == (0, PRICE)
    assert _book(app, books.ESCROW) == PRICE
    assert _entries(app, deal["id"]) == ["escrow_hold"]
    seen_by_buyer = client.get(f"/v1/deals/{deal['id']}", headers=market.opener.headers).json()
    assert seen_by_buyer["escrow"] == escrow
    assert ledger_problems(app) == []


def test_a_finalize_at_another_price_seals_nothing(app, client):
    market = escrow_market(app, client)
    thread = open_priced(client, market.opener, market.listing_id).json()["id"]
    wrong = finalize(client, market.poster, thread, json={"agreed_price_micro": PRICE + 1})
    assert_problem(wrong, 402, "held_funds_mismatch")
    assert balance_and_held(client, market.opener) == (0, DEAL_FEE + PRICE)
    right = finalize(client, market.poster, thread, json={"agreed_price_micro": PRICE})
    assert right.status_code == 201, right.text


def test_a_hold_that_does_not_cover_the_thread_price_seals_nothing(app, client):
    market = escrow_market(app, client)
    thread = open_priced(client, market.opener, market.listing_id).json()["id"]
    priced_offer(client, market.poster, thread, PRICE + 1)
    priced_offer(client, market.opener, thread, None)  # the buyer did not name the new price
    assert_problem(finalize(client, market.poster, thread), 402, "held_funds_mismatch")
    assert balance_and_held(client, market.opener) == (0, DEAL_FEE + PRICE)
    got = client.get(f"/v1/threads/{thread}", headers=market.poster.headers).json()
    assert got["status"] == "open"


def test_on_a_buy_listing_the_poster_pays_the_price_at_the_seal(app, client):
    market = escrow_market(app, client, listing_type="buy")
    poster_before = balance_and_held(client, market.poster)
    deal = sealed(client, market)
    assert deal["escrow"]["amount_micro"] == PRICE
    assert balance_and_held(client, market.poster) == (poster_before[0] - DEAL_FEE - PRICE, PRICE)


def test_a_buy_listing_poster_short_of_the_price_seals_nothing(app, client):
    market = escrow_market(app, client, listing_type="buy", buyer_funds=PRICE - 1)
    thread = open_priced(client, market.opener, market.listing_id).json()["id"]
    assert_problem(finalize(client, market.poster, thread), 402, "insufficient_funds_self")
    got = client.get(f"/v1/threads/{thread}", headers=market.poster.headers).json()
    assert got["status"] == "open"
    assert balance_and_held(client, market.opener)[1] == DEAL_FEE


# --- Delivery and acceptance ---------------------------------------------------------


def test_delivery_then_acceptance_pays_the_seller_less_the_fee(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    seller_before = balance_and_held(client, market.seller)[0]
    fees_before = _book(app, books.FEES)
    evidence = "ab" * 32
    delivered = step(client, market.seller, deal, "delivery", note="done", evidence_sha256=evidence)
    assert delivered.status_code == 200, delivered.text
    escrow = delivered.json()["escrow"]
    assert escrow["status"] == "delivered" and escrow["accept_by"]
    assert escrow["delivery"]["evidence_sha256"] == evidence
    accepted = step(client, market.buyer, deal, "acceptance")
    assert accepted.status_code == 200, accepted.text
    settled = accepted.json()["escrow"]
    fee = PRICE * FEE_BPS // 10_000
    assert settled["status"] == "released"
    assert settled["settlement"]["released_micro"] == PRICE - fee
    assert settled["settlement"]["fee_micro"] == fee
    assert balance_and_held(client, market.seller)[0] == seller_before + PRICE - fee
    assert balance_and_held(client, market.buyer) == (0, 0)
    assert _book(app, books.FEES) - fees_before == fee
    assert _book(app, books.ESCROW) == 0
    assert _entries(app, deal) == ["escrow_hold", "escrow_release"]
    assert ledger_problems(app) == []


def test_each_step_refuses_the_wrong_party_the_wrong_state_and_strangers(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    stranger = register(client)
    assert_problem(step(client, market.buyer, deal, "delivery"), 403, "forbidden")
    assert_problem(step(client, market.evaluator, deal, "delivery"), 403, "forbidden")
    assert_problem(step(client, stranger, deal, "delivery"), 404, "not_found")
    assert_problem(step(client, market.buyer, deal, "acceptance"), 409, "out_of_turn")
    assert_problem(step(client, market.seller, deal, "acceptance"), 403, "forbidden")
    assert_problem(step(client, market.buyer, deal, "rejection", reason="bad"), 409, "out_of_turn")
    ruling = step(client, market.evaluator, deal, "ruling", outcome="refund", reason="x")
    assert_problem(ruling, 409, "out_of_turn")
    assert_problem(
        step(client, market.seller, deal, "ruling", outcome="refund", reason="x"), 403, "forbidden"
    )
    assert step(client, market.seller, deal, "delivery").status_code == 200
    assert_problem(step(client, market.seller, deal, "delivery"), 409, "out_of_turn")
    assert step(client, market.buyer, deal, "acceptance").status_code == 200
    assert_problem(step(client, market.buyer, deal, "acceptance"), 409, "already_finalized")
    assert_problem(
        step(client, market.buyer, deal, "rejection", reason="late"), 409, "already_finalized"
    )
    assert_problem(step(client, market.seller, "no-such-deal", "delivery"), 404, "not_found")


def test_a_direct_deal_has_no_escrow_steps(app, client, market, thread):
    deal = finalize(client, market.poster, thread).json()
    assert "escrow" not in deal
    assert_problem(step(client, market.poster, deal["id"], "delivery"), 404, "not_found")


def test_every_step_needs_an_idempotency_key_and_a_retry_moves_nothing_twice(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    keyless = client.post(f"/v1/deals/{deal}/delivery", json={}, headers=market.seller.headers)
    assert_problem(keyless, 400, "invalid_input")
    step(client, market.seller, deal, "delivery")
    key = new_key()
    first = step(client, market.buyer, deal, "acceptance", key=key)
    again = step(client, market.buyer, deal, "acceptance", key=key)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert _entries(app, deal) == ["escrow_hold", "escrow_release"]


# --- Rejection and ruling ------------------------------------------------------------


def test_a_rejection_waits_for_the_evaluators_split_ruling(app, client):
    market = escrow_market(app, client)
    deal = sealed(client, market)["id"]
    seller_before = balance_and_held(client, market.seller)[0]
    step(client, market.seller, deal, "delivery")
    rejected = step(client, market.buyer, deal, "rejection", reason="half of it is missing")
    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["escrow"]["status"] == "rejected"
    # The evaluator reads the deal: the escrow, and nothing that reaches either party.
    seen = client.get(f"/v1/deals/{deal}", headers=market.evaluator.headers)
    assert seen.status_code == 200, seen.text
    assert seen.json()["escrow"]["rejection"]["reason"] == "half of it is missing"
    assert not {"reveal", "credential", "route"} & seen.json().keys()
    bad = step(client, market.evaluator, deal, "ruling", outcome="split", reason="half")
    assert_problem(bad, 400, "invalid_input")  # a split names the seller's share
    ruled = step(
        client,
        market.evaluator,
        deal,
        "ruling",
        outcome="split",
        seller_share_bps=4_000,
        reason="half",
    )
    assert ruled.status_code == 200, ruled.text
    escrow = ruled.json()["escrow"]
    share = PRICE * 4_000 // 10_000
    fee = share * FEE_BPS // 10_000
    assert escrow["status"] == "split"
    assert escrow["ruling"]["outcome"] == "split" and escrow["ruling"]["token"].startswith(
        "v4.public."
    )
    assert escrow["settlement"] == {
        **escrow["settlement"],
        "released_micro": share - fee,
        "refunded_micro": PRICE - share,
        "fee_micro": fee,
        "settled_by": "ruled",
    }
    assert balance_and_held(client, market.seller)[0] == seller_before + share - fee
    assert balance_and_held(client, market.buyer) == (PRICE - share, 0)
    assert _entries(app, deal) == ["escrow_hold", "escrow_split"]
    assert ledger_problems(app) == []


def test_a_refund_ruling_gives_the_buyer_everything(app, client):
    market = escrow_market(app, client)
    deal = rejected(client, market, "not what was agreed")
    ruled = step(client, market.evaluator, deal, "ruling", outcome="refund", reason="agreed")
    assert ruled.json()["escrow"]["status"] == "refunded"
    assert balance_and_held(client, market.buyer) == (PRICE, 0)
    assert_problem(
        step(client, market.evaluator, deal, "ruling", outcome="release", reason="again"),
        409,
        "already_finalized",
    )


@pytest.mark.parametrize("outcome", ["release", "refund"])
def test_a_ruling_names_no_share_but_a_split(app, client, outcome):
    market = escrow_market(app, client)
    deal = rejected(client, market, "no")
    wrong = step(
        client,
        market.evaluator,
        deal,
        "ruling",
        outcome=outcome,
        seller_share_bps=5_000,
        reason="r",
    )
    assert_problem(wrong, 400, "invalid_input")
    assert read_account(client, market.buyer)["held_micro"] == PRICE
