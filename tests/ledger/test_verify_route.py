"""GET /v1/ledger/verify (docs/interface.md §19): serves the stored verdict, no authentication."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from agent_broker import clock
from agent_broker.ledger.verdict import SCOPE
from tests.support.accounts import fund, register
from tests.support.ledger import (
    PAST_MARGIN,
    journal,
    run_sealer,
    seal_now,
    store_verdict,
    tamper,
    verdict,
)

PATH = "/v1/ledger/verify"
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _unavailable(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["detail"]
    return body


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_404_unavailable_before_the_first_verdict(client, app):
    journal(app, 2)
    clock.advance(PAST_MARGIN)  # sealable, but the sealer has not run
    body = _unavailable(client.get(PATH), 404)
    assert body == {"status": "unavailable", "detail": body["detail"]}


def test_404_unavailable_while_nothing_is_sealed(client, app):
    run_sealer(app)  # an empty journal
    _unavailable(client.get(PATH), 404)
    journal(app, 1)
    run_sealer(app)  # the row is younger than the safety margin
    _unavailable(client.get(PATH), 404)
    seal_now(app)
    assert client.get(PATH).status_code == 200


def test_an_ok_verdict_has_exactly_the_specified_fields(client, app):
    agent = register(client)
    fund(app, agent.account_id, 5_000_000)
    journal(app, 2)
    seal_now(app)
    response = client.get(PATH)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "status",
        "scope",
        "computed_at",
        "stale",
        "head",
        "sealed",
        "problems",
        "problem_count",
    }
    assert body["status"] == "ok"
    assert body["scope"] == SCOPE
    assert RFC3339.fullmatch(body["computed_at"])
    assert abs(_time(body["computed_at"]) - clock.now()) < timedelta(seconds=5)
    assert body["stale"] is False
    assert set(body["head"]) == {"hash", "sequence", "hash_algorithm"}
    assert re.fullmatch(r"[0-9a-f]{64}", body["head"]["hash"])
    assert body["head"]["sequence"] == 3
    assert body["head"]["hash_algorithm"] == "sha256"
    assert body["sealed"] == {"from": None, "through": 4}
    assert body["problems"] == []
    assert body["problem_count"] == 0


def test_the_scope_states_what_is_and_is_not_attested(client, app):
    journal(app, 1)
    seal_now(app)
    scope = client.get(PATH).json()["scope"]
    for phrase in (
        "journal rows inside the sealed range",
        "unaltered",
        "Does not attest",
        "deal existed once its records are deleted 7 days after sealing",
        "rows after the sealed range",
        "rows before first sealing",
        "protection against the operator",
        "completeness of every money movement",
        "hold taken at negotiation open and its release are not journalled",
    ):
        assert phrase in scope


def test_no_credential_is_needed_and_a_bad_one_is_ignored(client, app):
    journal(app, 1)
    seal_now(app)
    assert client.get(PATH).status_code == 200
    assert client.get(PATH, headers={"x-api-key": "ab_live_" + "0" * 32}).status_code == 200


def test_a_broken_verdict_names_the_row(client, app):
    journal(app, 3)
    seal_now(app)
    tamper(app, "UPDATE ledger_postings SET amount_micro = 1 WHERE entry_sequence = 2")
    run_sealer(app)
    body = client.get(PATH).json()
    assert body["status"] == "broken"
    assert body["problem_count"] == 1
    assert body["problems"] == [
        {
            "sequence": 2,
            "kind": "row_altered",
            "detail": "journal row 2 differs from what was sealed",
        }
    ]
    assert body["head"]["sequence"] == 3


def test_the_route_serves_the_stored_verdict_and_checks_nothing(client, app):
    journal(app, 2)
    seal_now(app)
    before = client.get(PATH).json()
    tamper(app, "UPDATE ledger_entries SET memo = 'changed' WHERE sequence = 1")
    assert client.get(PATH).json() == before
    run_sealer(app)
    assert client.get(PATH).json()["status"] == "broken"


def test_computed_at_is_refreshed_by_every_run_even_with_nothing_new(client, app):
    journal(app, 1)
    seal_now(app)
    first = client.get(PATH).json()
    clock.advance(timedelta(hours=1))
    run_sealer(app)
    second = client.get(PATH).json()
    gap = _time(second["computed_at"]) - _time(first["computed_at"])
    assert timedelta(minutes=59) < gap < timedelta(minutes=61)
    assert second["head"] == first["head"]


@pytest.mark.parametrize(
    ("moved", "stale"),
    [
        (timedelta(0), False),
        (timedelta(hours=3) - timedelta(seconds=1), False),
        (timedelta(hours=3, seconds=1), True),
        (timedelta(days=30), True),
        # The clock behind the stored computed_at: a verdict from the future.
        (-(timedelta(minutes=5) - timedelta(seconds=1)), False),
        (-timedelta(minutes=5, seconds=1), True),
    ],
)
def test_stale_after_3_hours_or_more_than_5_minutes_in_the_future(client, app, moved, stale):
    journal(app, 1)
    seal_now(app)
    with clock.travel(moved):
        body = client.get(PATH).json()
    assert body["stale"] is stale
    assert body["status"] == "ok"


def test_an_unreadable_computed_at_is_served_as_stale(client, app):
    journal(app, 1)
    seal_now(app)
    store_verdict(app, {**verdict(app), "computed_at": "yesterday"})
    response = client.get(PATH)
    assert response.status_code == 200
    body = response.json()
    assert body["computed_at"] is None
    assert body["stale"] is True


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all",
        "{}",
        "[]",
        {"status": "maybe"},
        {"status": "unavailable"},
        {"status": "ok", "problem_count": 1},
        {"status": "broken", "problems": [], "problem_count": 0},
        {"problem_count": "0"},
        {"head": {"sequence": 0, "hash": "0" * 64}, "sealed": {"from": None, "through": 1}},
        {"head": {"sequence": 3, "hash": "xyz"}},
        {"sealed": {"from": None, "through": 9}},
        {"extra": 1},
    ],
)
def test_503_unavailable_when_the_stored_verdict_is_unreadable(client, app, damage):
    journal(app, 3)
    seal_now(app)
    good = verdict(app)
    store_verdict(app, damage if isinstance(damage, str) else {**good, **damage})
    _unavailable(client.get(PATH), 503)


def test_a_broken_verdict_must_list_problems_consistently(client, app):
    journal(app, 25)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'rewritten'")
    run_sealer(app)
    body = client.get(PATH).json()
    assert (body["status"], body["problem_count"], len(body["problems"])) == ("broken", 25, 20)
    stored = verdict(app)
    store_verdict(app, {**stored, "problems": stored["problems"][:19]})
    _unavailable(client.get(PATH), 503)


def test_503_when_the_verdict_cannot_be_read_at_all(client, app):
    journal(app, 1)
    seal_now(app)
    with app.state.context.db.engine.begin() as conn:
        conn.execute(text("ALTER TABLE ledger_verdicts RENAME TO ledger_verdicts_moved"))
    try:
        _unavailable(client.get(PATH), 503)
    finally:
        with app.state.context.db.engine.begin() as conn:
            conn.execute(text("ALTER TABLE ledger_verdicts_moved RENAME TO ledger_verdicts"))


def test_openapi_models_the_verdict_and_the_unavailable_answers(client):
    operation = client.get("/openapi.json").json()["paths"][PATH]["get"]
    responses = operation["responses"]
    assert responses["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/LedgerVerdict"
    )
    for status in ("404", "503"):
        assert responses[status]["content"]["application/json"]["schema"]["$ref"].endswith(
            "/LedgerUnavailable"
        )
    assert "security" not in operation
