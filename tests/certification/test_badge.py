"""Scheduled checks and the daily badge, the clock moved hour by hour: the badge needs at
least 4 scheduled checks of the current route over 7 days with at least 90% passing; free
tests never count; a route change restarts the window; the badge shows on the public
reputation record and as seller_certified on listings; probes hold no database lock."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from agent_broker import clock
from agent_broker.certification.badge import is_certified
from tests.certification.conftest import (
    PERIOD_MICRO,
    ROUTE_PATH,
    answer_liveness,
    echoing,
    free_test,
    run,
    status,
    subscribe,
)
from tests.domains.conftest import prove
from tests.helpers import fund, new_key, register
from tests.listings.conftest import LISTING
from tests.tls_server import Answer

HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("passed", "total", "certified"),
    [(3, 3, False), (4, 4, True), (8, 9, False), (9, 10, True), (89, 100, False), (90, 100, True)],
)
def test_the_badge_rule_at_its_edges(passed, total, certified):
    assert is_certified(passed, total) is certified


@pytest.fixture
def subscriber(app, client, challenge_server, prover):
    fund(app, prover.account_id, 2 * PERIOD_MICRO, real_money=True)
    answer_liveness(challenge_server)
    free_test(client, prover)
    assert subscribe(client, prover).status_code == 200
    return prover


def _answers(server, outcomes):
    """The route passes or fails the scheduled probes in this order."""
    planned = list(outcomes)

    def answer(body: bytes) -> Answer:
        return echoing(body) if planned.pop(0) else Answer(status=500, body=b"{}")

    server.answer_with(ROUTE_PATH, answer)


def _checks(app, count):
    for _ in range(count):
        clock.advance(HOUR)
        run(app, "certification-checks")


def _reputation(client, agent):
    handle = client.get("/v1/account", headers=agent.headers).json()["handle"]
    return client.get(f"/v1/reputation/{handle}").json()


def test_three_passing_checks_are_not_enough_and_four_are(
    app, client, challenge_server, subscriber
):
    _answers(challenge_server, [True] * 4)
    _checks(app, 3)
    assert run(app, "certification-badges") == "updated 1 badges, 0 certified"
    assert status(client, subscriber)["public_certified"] is False
    assert "certified" not in _reputation(client, subscriber)
    _checks(app, 1)
    run(app, "certification-badges")
    record = status(client, subscriber)
    assert record["public_certified"] is True and record["passing_now"] is True
    assert record["checked_on"] == clock.now().date().isoformat()
    assert [r["kind"] for r in record["recent"]][:4] == ["scheduled"] * 4
    public = _reputation(client, subscriber)
    assert public["certified"] is True
    assert public["certified_checked_on"] == clock.now().date().isoformat()


@pytest.mark.parametrize(
    ("outcomes", "certified"), [([True] * 9 + [False], True), ([True] * 8 + [False], False)]
)
def test_ninety_percent_passes_and_eighty_nine_does_not(
    app, client, challenge_server, subscriber, outcomes, certified
):
    _answers(challenge_server, outcomes)
    _checks(app, len(outcomes))
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is certified
    assert status(client, subscriber)["passing_now"] is False  # the latest check failed


def test_free_tests_never_count(app, client, challenge_server, subscriber):
    answer_liveness(challenge_server)
    for _ in range(5):
        free_test(client, subscriber)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is False


def test_the_badge_goes_when_checks_fail_and_old_ones_age_out(
    app, client, challenge_server, subscriber
):
    _answers(challenge_server, [True] * 4 + [False] * 4)
    _checks(app, 4)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is True
    _checks(app, 4)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is False
    assert "certified" not in _reputation(client, subscriber)


def test_checks_older_than_seven_days_do_not_count(app, client, challenge_server, subscriber):
    _answers(challenge_server, [True] * 4)
    _checks(app, 4)
    clock.advance(timedelta(days=7))
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is False


def test_a_route_change_restarts_the_evidence_window(app, client, challenge_server, subscriber):
    _answers(challenge_server, [True] * 4)
    _checks(app, 4)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is True
    # A new route on another proved domain: the old route's checks stop counting at once.
    prove(client, challenge_server, subscriber, "https://buyer.dev/deal")
    run(app, "certification-badges")
    record = status(client, subscriber)
    assert record["public_certified"] is False and record["passing_now"] is False
    _answers(challenge_server, [True] * 4)
    _checks(app, 4)
    run(app, "certification-badges")
    record = status(client, subscriber)
    assert record["window_route"] == "https://buyer.dev/deal"
    assert record["public_certified"] is True


def test_listings_show_seller_certified_like_the_reputation_record(
    app, client, challenge_server, subscriber
):
    other = register(client)
    fund(app, other.account_id, PERIOD_MICRO, real_money=True)
    for agent in (subscriber, other):
        headers = {**agent.headers, "Idempotency-Key": new_key()}
        assert client.post("/v1/listings", json=LISTING, headers=headers).status_code == 201
    _answers(challenge_server, [True] * 4)
    _checks(app, 4)
    run(app, "certification-badges")
    feed = client.get("/v1/feed", headers=other.headers).json()["listings"]
    flags = {item["poster_id"]: item.get("seller_certified") for item in feed}
    handle = client.get("/v1/account", headers=subscriber.headers).json()["handle"]
    assert flags.pop(handle) is True
    assert list(flags.values()) == [None]  # omitted for an account without the badge


def test_an_unsubscribed_route_is_not_probed(app, client, challenge_server, prover):
    answer_liveness(challenge_server)
    free_test(client, prover)
    seen = len(challenge_server.seen)
    assert run(app, "certification-checks").endswith("checked 0 routes, 0 passed")
    assert len(challenge_server.seen) == seen


def test_a_stalled_route_holds_no_database_lock(app, client, challenge_server, subscriber):
    challenge_server.answer(ROUTE_PATH, Answer(body=b"{}", delay_seconds=3))
    job = threading.Thread(target=run, args=(app, "certification-checks"))
    job.start()
    try:
        deadline = time.monotonic() + 5
        while ROUTE_PATH not in challenge_server.paths_seen()[-1:] and time.monotonic() < deadline:
            time.sleep(0.02)
        started = time.monotonic()
        newcomer = register(client)
        fund(app, newcomer.account_id, PERIOD_MICRO, real_money=True)
        headers = {**newcomer.headers, "Idempotency-Key": new_key()}
        assert client.post("/v1/listings", json=LISTING, headers=headers).status_code == 201
        assert time.monotonic() - started < 1.5
        assert job.is_alive()  # the probe was still waiting meanwhile
    finally:
        challenge_server.release.set()
        job.join(timeout=15)
    last = status(client, subscriber)["recent"][0]
    assert last["kind"] == "scheduled" and last["passed"] is False
