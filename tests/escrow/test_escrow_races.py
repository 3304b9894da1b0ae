"""Escrow steps racing each other through a real server with concurrent requests: an
acceptance and the deadline job, an acceptance and a rejection, two rulings, retries with
one Idempotency-Key. Exactly one outcome each time, nothing answers 5xx, and the ledger
bears every escrow out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.jobs.runner import run_job
from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry, Posting
from tests.support.escrow import PRICE, escrow_market, ledger_problems, sealed
from tests.support.http import new_key
from tests.support.races import all_at_once, racing_app  # noqa: F401 (racing_app: the app fixture)

SETTLING = ("escrow_release", "escrow_refund", "escrow_split")


@pytest.fixture
def http(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=60) as client:
        yield client


def _step(agent, deal_id: str, name: str, key: str | None = None, **body):  # type: ignore[no-untyped-def]
    headers = {**agent.headers, "Idempotency-Key": key or new_key()}
    return lambda client: client.post(f"/v1/deals/{deal_id}/{name}", json=body, headers=headers)


def _outcomes(responses: list) -> Counter:
    assert all(r.status_code < 500 for r in responses), [r.text for r in responses]
    return Counter(
        "ok" if r.status_code == 200 else f"{r.status_code} {r.json()['reason']}" for r in responses
    )


def _settlements(app, deal_id: str) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(
            select(func.count())
            .select_from(JournalEntry)
            .where(JournalEntry.reference == deal_id, JournalEntry.kind.in_(SETTLING))
        )


def _escrow_book(app) -> int:
    with app.state.context.db.reader() as session:
        total = session.scalar(
            select(func.sum(Posting.amount_micro)).where(Posting.account_code == books.ESCROW)
        )
    return int(total or 0)


def _delivered(app, http) -> tuple:
    market = escrow_market(app, http)
    deal = sealed(http, market)["id"]
    assert _step(market.seller, deal, "delivery")(http).status_code == 200
    return market, deal


def test_acceptances_racing_the_deadline_job_settle_once(app, http, live_server):
    market, deal = _delivered(app, http)
    clock.advance(timedelta(hours=49))  # past accept_by: the job releases it too
    calls = [_step(market.buyer, deal, "acceptance") for _ in range(4)]
    calls.append(lambda _client: run_job(app.state.context, "escrow-deadlines"))
    results = all_at_once(calls, live_server)
    accepted = _outcomes(results[:4])
    job = results[4]
    assert accepted["ok"] + (job == "settled 1 escrows past their deadline") == 1, (accepted, job)
    assert set(accepted) <= {"ok", "409 already_finalized"}
    assert _settlements(app, deal) == 1
    assert _escrow_book(app) == 0
    assert ledger_problems(app) == []


def test_an_acceptance_and_a_rejection_at_once_have_one_outcome(app, http, live_server):
    market, deal = _delivered(app, http)
    calls = [_step(market.buyer, deal, "acceptance") for _ in range(2)]
    calls += [_step(market.buyer, deal, "rejection", reason="no") for _ in range(2)]
    outcomes = _outcomes(all_at_once(calls, live_server))
    assert outcomes["ok"] == 1, outcomes
    escrow = http.get(f"/v1/deals/{deal}", headers=market.buyer.headers).json()["escrow"]
    if escrow["status"] == "rejected":
        assert _settlements(app, deal) == 0
        assert _escrow_book(app) == PRICE
    else:
        assert escrow["status"] == "released" and _settlements(app, deal) == 1
    assert ledger_problems(app) == []


def test_two_rulings_at_once_pay_out_once(app, http, live_server):
    market, deal = _delivered(app, http)
    assert _step(market.buyer, deal, "rejection", reason="missing")(http).status_code == 200
    calls = [
        _step(market.evaluator, deal, "ruling", outcome="refund", reason="a"),
        _step(market.evaluator, deal, "ruling", outcome="release", reason="b"),
        _step(
            market.evaluator, deal, "ruling", outcome="split", seller_share_bps=2_500, reason="c"
        ),
    ]
    outcomes = _outcomes(all_at_once(calls, live_server))
    assert outcomes == Counter({"ok": 1, "409 already_finalized": 2}), outcomes
    assert _settlements(app, deal) == 1
    assert _escrow_book(app) == 0
    assert ledger_problems(app) == []


def test_retries_with_one_key_accept_once(app, http, live_server):
    market, deal = _delivered(app, http)
    key = new_key()
    results = all_at_once([_step(market.buyer, deal, "acceptance", key=key)] * 4, live_server)
    outcomes = _outcomes(results)
    assert outcomes["ok"] >= 1, outcomes
    assert set(outcomes) <= {"ok", "409 idempotency_key_reuse"}, outcomes
    assert _settlements(app, deal) == 1
    seller = http.get("/v1/account", headers=market.seller.headers).json()
    fee = PRICE // 100
    assert seller["balance_micro"] == PRICE - fee
    assert ledger_problems(app) == []
