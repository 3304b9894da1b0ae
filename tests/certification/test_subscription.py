"""Subscribing, canceling and renewing over HTTP, with the clock moved through periods:
each refusal in its order, the charge taken once, a canceled period resuming free,
renewal back to back, and a lapse on a short balance."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import httpx

from agent_broker import clock
from agent_broker.certification.service import record_of
from agent_broker.ledger.service import wallet
from tests.support.accounts import balance, fund, register
from tests.support.certification import (
    PERIOD_MICRO,
    ROUTE,
    answer_liveness,
    cancel,
    free_test,
    status,
    subscribe,
)
from tests.support.domains import set_route
from tests.support.http import assert_problem, new_key
from tests.support.jobs import run
from tests.support.tls import Answer

DAY = timedelta(days=1)


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _ready(app, client, server, agent, micro=PERIOD_MICRO):
    """Funded with real money and a passing free test of the current route."""
    fund(app, agent.account_id, micro, real_money=True)
    answer_liveness(server)
    assert free_test(client, agent).json()["last_test"]["passed"] is True


def test_without_a_proved_domain_subscribing_is_409(app, client):
    agent = register(client)
    fund(app, agent.account_id, PERIOD_MICRO, real_money=True)
    assert_problem(subscribe(client, agent), 409, "certification_domain_unverified")


def test_an_account_never_funded_with_real_money_is_409(app, client, challenge_server, prover):
    fund(app, prover.account_id, 2 * PERIOD_MICRO)  # credit, not real money
    answer_liveness(challenge_server)
    free_test(client, prover)
    assert_problem(subscribe(client, prover), 409, "certification_unfunded")


def test_a_passing_test_of_the_current_route_within_24_hours_is_needed(
    app, client, challenge_server, prover
):
    fund(app, prover.account_id, PERIOD_MICRO, real_money=True)
    assert_problem(subscribe(client, prover), 409, "certification_test_required")
    challenge_server.answer("/deal", Answer(status=503))
    free_test(client, prover)
    assert_problem(subscribe(client, prover), 409, "certification_test_required")
    answer_liveness(challenge_server)
    free_test(client, prover)
    clock.advance(DAY + timedelta(seconds=1))
    assert_problem(subscribe(client, prover), 409, "certification_test_required")
    assert balance(client, prover) == PERIOD_MICRO


def test_a_test_of_an_earlier_route_does_not_count(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover)
    set_route(client, prover, "https://agents.dev/other")
    assert_problem(subscribe(client, prover), 409, "certification_test_required")


def test_a_short_balance_is_402_and_writes_nothing(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=PERIOD_MICRO - 1)
    key = new_key()
    assert_problem(subscribe(client, prover, key), 402, "insufficient_funds_self")
    record = status(client, prover)
    assert record["subscribed"] is False and "window_route" not in record
    assert balance(client, prover) == PERIOD_MICRO - 1
    # Nothing was kept for the key either: topped up, the same key subscribes.
    fund(app, prover.account_id, 1, real_money=True)
    assert subscribe(client, prover, key).status_code == 200
    assert balance(client, prover) == 0


def test_subscribing_charges_one_period_once(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=3 * PERIOD_MICRO)
    key = new_key()
    first = subscribe(client, prover, key)
    assert first.status_code == 200, first.text
    record = first.json()
    assert record["subscribed"] is True and record["renew"] is True
    assert record["window_route"] == ROUTE
    start, end = record["period_start"], record["period_end"]
    assert _at(end) - _at(start) == timedelta(days=30)
    assert balance(client, prover) == 2 * PERIOD_MICRO
    again = subscribe(client, prover, key)
    assert again.status_code == 200 and again.json() == record
    # A new key while a period runs charges nothing either.
    assert subscribe(client, prover).status_code == 200
    assert balance(client, prover) == 2 * PERIOD_MICRO
    assert status(client, prover)["period_end"] == end


def test_cancel_stops_renewal_and_a_paid_period_resumes_free(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=2 * PERIOD_MICRO)
    subscribe(client, prover)
    canceled = cancel(client, prover)
    assert canceled.status_code == 200
    assert canceled.json()["renew"] is False and canceled.json()["subscribed"] is True
    assert cancel(client, prover).json() == canceled.json()  # naturally idempotent
    assert balance(client, prover) == PERIOD_MICRO  # nothing refunded
    resumed = subscribe(client, prover).json()
    assert resumed["renew"] is True and resumed["period_end"] == canceled.json()["period_end"]
    assert balance(client, prover) == PERIOD_MICRO


def test_a_canceled_period_runs_out_and_is_not_renewed(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=2 * PERIOD_MICRO)
    subscribe(client, prover)
    cancel(client, prover)
    clock.advance(timedelta(days=30, seconds=1))
    assert run(app, "certification-checks").startswith("renewed 0, lapsed 0")
    assert status(client, prover)["subscribed"] is False
    assert balance(client, prover) == PERIOD_MICRO


def test_renewal_charges_the_next_period_back_to_back(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=2 * PERIOD_MICRO)
    first = subscribe(client, prover).json()
    clock.advance(timedelta(days=30, minutes=30))
    assert run(app, "certification-checks").startswith("renewed 1, lapsed 0")
    renewed = status(client, prover)
    assert renewed["subscribed"] is True and renewed["renew"] is True
    assert renewed["period_start"] == first["period_end"]
    assert balance(client, prover) == 0
    # The next renewal finds the balance short: the subscription lapses cleanly.
    clock.advance(timedelta(days=30))
    assert run(app, "certification-checks").startswith("renewed 0, lapsed 1")
    lapsed = status(client, prover)
    assert lapsed["subscribed"] is False and lapsed["renew"] is False
    assert balance(client, prover) == 0


def test_subscribing_needs_an_api_key_and_an_idempotency_key(client, prover):
    assert_problem(client.post("/v1/account/certification"), 401, "unauthorized")
    missing = client.post("/v1/account/certification", headers=prover.headers)
    assert missing.status_code == 400
    assert_problem(client.post("/v1/account/certification/cancel"), 401, "unauthorized")


def test_concurrent_subscribes_charge_one_period(app, challenge_server, live_server, prover):
    with httpx.Client(base_url=live_server) as http:
        fund(app, prover.account_id, 3 * PERIOD_MICRO, real_money=True)
        answer_liveness(challenge_server)
        assert (
            http.post("/v1/account/certification/test", headers=prover.headers).status_code == 200
        )
        barrier = threading.Barrier(8)

        def attempt(_: int) -> int:
            barrier.wait()
            headers = {**prover.headers, "Idempotency-Key": new_key()}
            return http.post("/v1/account/certification", headers=headers).status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(attempt, range(8)))
        assert statuses == [200] * 8
        account = http.get("/v1/account", headers=prover.headers).json()
    assert account["balance_micro"] == 2 * PERIOD_MICRO


def test_a_disabled_account_is_not_renewed(app, client, challenge_server, prover):
    _ready(app, client, challenge_server, prover, micro=2 * PERIOD_MICRO)
    subscribe(client, prover)
    assert client.post("/dashboard/keys", headers=prover.headers).status_code == 200  # disable
    clock.advance(timedelta(days=30, minutes=30))
    assert run(app, "certification-checks").startswith("renewed 0, lapsed 1")
    with app.state.context.db.reader() as session:
        assert record_of(session, prover.account_id).renew is False
        assert wallet(session, prover.account_id, now=clock.now()).spendable_micro == PERIOD_MICRO
