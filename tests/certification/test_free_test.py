"""The liveness contract and the free test: one probe of the current deal route through
the guarded client, only on a proved domain, six an hour, recorded as the last test and
never counted as a scheduled check."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
from sqlalchemy import func, select

from agent_broker.certification.models import CertificationCheck
from tests.support.accounts import register
from tests.support.certification import ROUTE, ROUTE_PATH, answer_liveness, free_test, status
from tests.support.domains import set_route
from tests.support.http import assert_problem
from tests.support.tls import Answer


def test_the_liveness_contract_is_published(client):
    response = client.get("/bindings/liveness-v1")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    text = response.text
    for promise in ('"type": "liveness-v1"', "10 seconds", "Redirects are not followed", "nonce"):
        assert promise in text


def test_an_account_that_never_tested_has_an_empty_record(client):
    agent = register(client)
    assert status(client, agent) == {
        "subscribed": False,
        "renew": False,
        "passing_now": False,
        "public_certified": False,
        "recent": [],
    }


def test_a_route_that_echoes_the_nonce_passes(client, challenge_server, prover):
    answer_liveness(challenge_server)
    response = free_test(client, prover)
    assert response.status_code == 200, response.text
    record = response.json()
    assert record["last_test"]["passed"] is True
    assert record["last_test"]["route"] == ROUTE
    assert record["last_test"]["status_code"] == 200
    assert [(r["kind"], r["passed"]) for r in record["recent"]] == [("test", True)]
    # A free test never makes the account certified or counts as a scheduled check.
    assert record["passing_now"] is False and record["public_certified"] is False
    assert record["subscribed"] is False and "window_route" not in record
    assert status(client, prover) == record

    probe = [seen for seen in challenge_server.seen if seen.path == ROUTE_PATH][-1]
    assert probe.method == "POST" and probe.host == "agents.dev"
    sent = json.loads(probe.body)
    assert sent["type"] == "liveness-v1" and re.fullmatch(r"[0-9a-f]{32}", sent["nonce"])


def test_each_probe_sends_a_new_nonce(client, challenge_server, prover):
    answer_liveness(challenge_server)
    free_test(client, prover)
    free_test(client, prover)
    nonces = [json.loads(s.body)["nonce"] for s in challenge_server.seen if s.path == ROUTE_PATH]
    assert len(nonces) == 2 and nonces[0] != nonces[1]


def _failing(challenge_server, answer):
    challenge_server.answer(ROUTE_PATH, answer)


def test_answers_that_break_the_contract_fail_and_are_recorded(client, challenge_server, prover):
    wrong_nonce = json.dumps({"nonce": "0" * 32}).encode()
    cases = [
        (Answer(status=500, body=b"{}"), 500, "not 2xx"),
        (Answer(status=302, headers={"Location": "https://agents.dev/x"}), 302, "redirect"),
        (Answer(body=b"ok"), 200, "not JSON"),
        (Answer(body=wrong_nonce), 200, "does not echo"),
        (Answer(body=b"[]"), 200, "does not echo"),
    ]
    _each_fails_as_expected(client, challenge_server, prover, cases)


def test_answers_that_would_trip_the_checks_themselves_fail_too(client, challenge_server, prover):
    cases = [
        # Not ASCII, or half a UTF-16 pair: a plain mismatch, not an error in the comparison.
        (Answer(body=json.dumps({"nonce": "\u00e9" * 32}).encode()), 200, "does not echo"),
        (Answer(body=b'{"nonce": "\\ud800"}'), 200, "does not echo"),
        # Nested past the JSON parser's depth, within the answer's size cap.
        (Answer(body=b"[" * 3000), 200, "not JSON"),
    ]
    _each_fails_as_expected(client, challenge_server, prover, cases)


def _each_fails_as_expected(client, challenge_server, prover, cases):  # noqa: ANN001, ANN202
    for answer, code, why in cases:
        _failing(challenge_server, answer)
        record = free_test(client, prover).json()
        assert record["last_test"]["passed"] is False, why
        assert record["last_test"]["status_code"] == code
        assert why in record["last_test"]["detail"]
    assert len(status(client, prover)["recent"]) == len(cases)


def test_a_route_too_slow_to_answer_fails(app, client, challenge_server, prover):
    challenge_server.answer(ROUTE_PATH, Answer(body=b"{}", delay_seconds=11))
    record = free_test(client, prover).json()
    assert record["last_test"]["passed"] is False
    assert "status_code" not in record["last_test"]
    assert "timeout" in record["last_test"]["detail"]


def test_without_a_deal_route_or_a_proved_domain_it_is_409(client, challenge_server):
    agent = register(client)
    assert_problem(free_test(client, agent), 409, "certification_domain_unverified")
    set_route(client, agent, ROUTE)
    assert_problem(free_test(client, agent), 409, "certification_domain_unverified")
    assert ROUTE_PATH not in challenge_server.paths_seen()


def test_a_route_moved_to_an_unproved_domain_is_409(client, challenge_server, prover):
    set_route(client, prover, "https://third.dev/deal")
    assert_problem(free_test(client, prover), 409, "certification_domain_unverified")


def test_six_tests_an_hour_then_429(app, client, challenge_server, prover):
    answer_liveness(challenge_server)
    for _ in range(6):
        assert free_test(client, prover).status_code == 200
    refused = assert_problem(free_test(client, prover), 429, "rate_limited")
    assert int(refused["retryAfterSeconds"]) > 0
    with app.state.context.db.reader() as session:
        count = session.scalar(select(func.count()).select_from(CertificationCheck))
    assert count == 6


def test_the_routes_need_a_key(client):
    assert_problem(client.get("/v1/account/certification"), 401, "unauthorized")
    assert_problem(client.post("/v1/account/certification/test"), 401, "unauthorized")


def test_the_webhook_binding_is_published(client):
    response = client.get("/bindings/webhook-v1")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/markdown")
    for promise in ("counterparty_endpoint", "Authorization: Bearer", "svc.deal.v1", "event_id"):
        assert promise in response.text


def test_a_stalled_route_holds_no_database_lock_during_a_free_test(
    app, challenge_server, live_server, prover
):
    challenge_server.answer(ROUTE_PATH, Answer(body=b"{}", delay_seconds=3))
    with httpx.Client(base_url=live_server, timeout=20) as http:
        tested: list[httpx.Response] = []
        probe = threading.Thread(
            target=lambda: tested.append(
                http.post("/v1/account/certification/test", headers=prover.headers)
            )
        )
        probe.start()
        try:
            deadline = time.monotonic() + 5
            while ROUTE_PATH not in challenge_server.paths_seen() and time.monotonic() < deadline:
                time.sleep(0.02)
            started = time.monotonic()
            registered = http.post("/v1/account/register", json={"accepted_terms": True})
            assert registered.status_code == 201
            assert time.monotonic() - started < 1.5
            assert probe.is_alive()  # the probe was still waiting meanwhile
        finally:
            challenge_server.release.set()
            probe.join(timeout=15)
    assert tested[0].status_code == 200
    assert tested[0].json()["last_test"]["passed"] is False
