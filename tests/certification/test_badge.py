"""Scheduled checks and the daily badge, the clock moved hour by hour: the badge needs at
least 4 scheduled checks of the current route over 7 days with at least 90% passing; free
tests never count; a route change restarts the window; a route change or a lapse takes
the badge at once; the badge shows on the public reputation record and as
seller_certified on listings; probes hold no database lock."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest

from agent_broker import clock
from agent_broker.certification.badge import is_certified
from agent_broker.certification.service import record_of
from tests.support.accounts import fund, handle_of, register
from tests.support.certification import (
    PERIOD_MICRO,
    ROUTE,
    ROUTE_PATH,
    answer_liveness,
    cancel,
    free_test,
    status,
    subscribe,
)
from tests.support.domains import echoing, prove, set_route
from tests.support.http import new_key
from tests.support.jobs import run
from tests.support.market import LISTING, listed
from tests.support.tls import Answer

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
    return client.get(f"/v1/reputation/{handle_of(client, agent)}").json()


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


# The badge says only what is true now: a route change or a lapse takes it at once, on
# every surface, before any job runs; evidence from an earlier route or before an unpaid
# gap never counts toward a new badge.


def _certified_everywhere(client, agent, listing_id):
    """The badge as each surface shows it: the public record, the listing (read and
    feed), the public page and the account's own status record."""
    handle = client.get("/v1/account", headers=agent.headers).json()["handle"]
    listing = client.get(f"/v1/listings/{listing_id}", headers=agent.headers).json()
    feed = client.get("/v1/feed", headers=agent.headers).json()["listings"]
    (entry,) = [item for item in feed if item["id"] == listing_id]
    page = client.get(f"/market/{handle}").text
    return {
        "record": _reputation(client, agent).get("certified", False),
        "listing": listing.get("seller_certified", False),
        "feed": entry.get("seller_certified", False),
        "page": 'class="tag badge">certified' in page,
        "status": status(client, agent)["public_certified"],
    }


@pytest.fixture
def certified(app, client, challenge_server, subscriber):
    """A certified subscriber with a live listing: (agent, listing id)."""
    listing_id = listed(client, subscriber)
    answer_liveness(challenge_server)
    _checks(app, 4)
    run(app, "certification-badges")
    assert set(_certified_everywhere(client, subscriber, listing_id).values()) == {True}
    return subscriber, listing_id


def test_a_route_change_takes_the_badge_at_once_everywhere(app, client, certified):
    agent, listing_id = certified
    set_route(client, agent, ROUTE)  # the same route again: the badge stays
    assert set(_certified_everywhere(client, agent, listing_id).values()) == {True}
    set_route(client, agent, "https://agents.dev/other")  # same proved domain, new route
    assert set(_certified_everywhere(client, agent, listing_id).values()) == {False}
    record = status(client, agent)
    assert record["passing_now"] is False and "window_route" not in record


def test_checks_of_an_earlier_route_never_count_again(app, client, certified):
    agent, _ = certified
    set_route(client, agent, "https://agents.dev/other")
    set_route(client, agent, ROUTE)  # back to the route checked four times already
    assert status(client, agent)["public_certified"] is False
    _checks(app, 1)
    run(app, "certification-badges")
    record = status(client, agent)
    assert record["window_route"] == ROUTE and record["passing_now"] is True
    assert record["public_certified"] is False  # one check since the change, not five
    _checks(app, 3)
    run(app, "certification-badges")
    assert status(client, agent)["public_certified"] is True


def _period_end(client, agent) -> datetime:
    return datetime.fromisoformat(status(client, agent)["period_end"].replace("Z", "+00:00"))


def test_a_lapsed_period_takes_the_badge_at_once_everywhere(
    app, client, challenge_server, subscriber
):
    answer_liveness(challenge_server)
    assert cancel(client, subscriber).status_code == 200
    period_end = _period_end(client, subscriber)
    # Certified on four passing checks in the paid period's last hours.
    clock.advance(period_end - clock.now() - 5 * HOUR)
    listing_id = listed(client, subscriber)
    _checks(app, 4)
    run(app, "certification-badges")
    clock.advance(period_end - clock.now() - timedelta(seconds=1))
    assert set(_certified_everywhere(client, subscriber, listing_id).values()) == {True}
    clock.advance(timedelta(seconds=2))  # past the period's end; no job has run
    assert set(_certified_everywhere(client, subscriber, listing_id).values()) == {False}
    assert status(client, subscriber)["subscribed"] is False
    # The daily update, within 7 days of those checks, does not give it back either.
    assert run(app, "certification-badges") == "updated 1 badges, 0 certified"
    with app.state.context.db.reader() as session:
        assert record_of(session, subscriber.account_id).public_certified is False


def test_checks_before_an_unpaid_gap_do_not_count_toward_a_new_badge(
    app, client, challenge_server, subscriber
):
    answer_liveness(challenge_server)
    assert cancel(client, subscriber).status_code == 200
    period_end = _period_end(client, subscriber)
    # Four passing checks in the paid period's last hours: certified.
    clock.advance(period_end - clock.now() - 5 * HOUR)
    _checks(app, 4)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is True
    # Lapsed for two hours, then subscribed again: nothing from before the gap counts.
    clock.advance(3 * HOUR)
    assert free_test(client, subscriber).json()["last_test"]["passed"] is True
    resumed = subscribe(client, subscriber)
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["subscribed"] is True and resumed.json()["public_certified"] is False
    assert "certified" not in _reputation(client, subscriber)
    _checks(app, 1)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is False  # one check, not five
    _checks(app, 3)
    run(app, "certification-badges")
    assert status(client, subscriber)["public_certified"] is True


def test_a_probe_answered_after_a_route_change_does_not_bring_the_old_route_back(
    app, client, challenge_server, subscriber
):
    def slow_echo(body: bytes) -> Answer:
        answer = echoing(body)
        return Answer(body=answer.body, headers=answer.headers, delay_seconds=5)

    challenge_server.answer_with(ROUTE_PATH, slow_echo)
    probes_before = len(challenge_server.paths_seen())
    job = threading.Thread(target=run, args=(app, "certification-checks"))
    job.start()
    try:
        deadline = time.monotonic() + 5
        while len(challenge_server.paths_seen()) == probes_before and time.monotonic() < deadline:
            time.sleep(0.02)
        assert job.is_alive()  # the probe is waiting
        set_route(client, subscriber, "https://agents.dev/other")  # while the probe waits
    finally:
        challenge_server.release.set()
        job.join(timeout=15)
    record = status(client, subscriber)
    assert record["recent"][0]["route"] == ROUTE and record["recent"][0]["passed"] is True
    assert "window_route" not in record  # not the route the account left
    assert record["passing_now"] is False


def test_a_route_answering_past_the_parsers_depth_is_a_failed_check(
    app, client, challenge_server, subscriber
):
    challenge_server.answer(ROUTE_PATH, Answer(body=b"[" * 3000))
    _checks(app, 1)
    last = status(client, subscriber)["recent"][0]
    assert last["kind"] == "scheduled" and last["passed"] is False
    assert "not JSON" in last["detail"]


def test_a_probe_that_raises_is_a_failed_check_not_a_failed_round(
    app, client, challenge_server, subscriber, monkeypatch
):
    async def broken(_outbound, _route):  # noqa: ANN001, ANN202
        raise RuntimeError("a fault in the probe itself")

    monkeypatch.setattr("agent_broker.certification.checks.probe", broken)
    clock.advance(HOUR)
    assert run(app, "certification-checks").startswith("renewed 0, lapsed 0")
    last = status(client, subscriber)["recent"][0]
    assert last["kind"] == "scheduled" and last["passed"] is False
    assert last["detail"] == "probe error: RuntimeError"
