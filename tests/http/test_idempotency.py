"""The Idempotency-Key mechanism, through a route that charges money, and through
registration, with real concurrent requests against a live server."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import httpx
import pytest
from fastapi import FastAPI, Response
from pydantic import BaseModel
from sqlalchemy import func, select

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.accounts.models import Account
from agent_broker.db.session import WriteSession
from agent_broker.http.idempotency import RequiredIdempotency, answer
from agent_broker.http.policy import authenticated
from agent_broker.idempotency.service import Outcome, run_once
from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry
from agent_broker.ledger.service import charge, wallet
from agent_broker.problems import IdempotencyKeyReuse
from tests.support.accounts import fund, register
from tests.support.http import assert_problem, new_key


class ChargeRequest(BaseModel):
    amount_micro: int


@pytest.fixture
def app(make_app) -> FastAPI:
    """The service plus one route that charges through the shared idempotency mechanism."""
    app = make_app()

    @app.post("/test/charges", status_code=201)
    def pay(
        body: ChargeRequest,
        response: Response,
        caller: Annotated[Caller, authenticated(writes=True)],
        session: WriteSession,
        idempotency: RequiredIdempotency,
    ):
        def do():
            charge(
                session,
                caller.account_id,
                body.amount_micro,
                sink=books.FEES,
                kind="test",
                memo="test charge",
                now=clock.now(),
            )
            left = wallet(session, caller.account_id, now=clock.now()).spendable_micro
            return Outcome(201, {"charged": body.amount_micro, "left": left})

        return answer(
            response, run_once(session, caller.account_id, idempotency, do, now=clock.now())
        )

    return app


def _charges(app) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(
            select(func.count()).select_from(JournalEntry).where(JournalEntry.kind == "test")
        )


def test_a_replay_returns_the_first_response_and_charges_once(app, client):
    agent = register(client)
    fund(app, agent.account_id, 1_000_000)
    key = new_key()
    headers = {**agent.headers, "Idempotency-Key": key}
    first = client.post("/test/charges", json={"amount_micro": 300_000}, headers=headers)
    again = client.post("/test/charges", json={"amount_micro": 300_000}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() == {"charged": 300_000, "left": 700_000}
    assert _charges(app) == 1


def test_the_same_key_with_a_different_request_is_refused(app, client):
    agent = register(client)
    fund(app, agent.account_id, 1_000_000)
    headers = {**agent.headers, "Idempotency-Key": new_key()}
    client.post("/test/charges", json={"amount_micro": 1}, headers=headers)
    assert_problem(
        client.post("/test/charges", json={"amount_micro": 2}, headers=headers),
        409,
        "idempotency_key_reuse",
    )
    assert _charges(app) == 1


def test_the_key_is_scoped_to_the_caller(app, client):
    alice, bob = register(client), register(client)
    for agent in (alice, bob):
        fund(app, agent.account_id, 1_000)
    key = new_key()
    for agent in (alice, bob):
        response = client.post(
            "/test/charges",
            json={"amount_micro": 10},
            headers={**agent.headers, "Idempotency-Key": key},
        )
        assert response.json() == {"charged": 10, "left": 990}
    assert _charges(app) == 2


@pytest.mark.parametrize("key", [None, "", "x" * 256, b"caf\xe9-key", "tab\tkey"])
def test_a_required_key_that_is_missing_or_malformed_is_invalid_input(app, client, key):
    agent = register(client)
    headers = dict(agent.headers)
    if key is not None:
        headers["Idempotency-Key"] = key
    body = assert_problem(
        client.post("/test/charges", json={"amount_micro": 1}, headers=headers),
        400,
        "invalid_input",
    )
    assert "Idempotency-Key" in body["detail"]


def test_a_refused_request_leaves_the_key_free_for_a_corrected_retry(app, client):
    agent = register(client)
    headers = {**agent.headers, "Idempotency-Key": new_key()}
    assert_problem(
        client.post("/test/charges", json={"amount_micro": 500}, headers=headers),
        402,
        "insufficient_funds_self",
    )
    fund(app, agent.account_id, 500)
    retry = client.post("/test/charges", json={"amount_micro": 500}, headers=headers)
    assert retry.status_code == 201
    assert retry.json() == {"charged": 500, "left": 0}


def test_a_key_past_retention_is_forgotten(app, client):
    from datetime import timedelta

    agent = register(client)
    fund(app, agent.account_id, 1_000)
    headers = {**agent.headers, "Idempotency-Key": new_key()}
    client.post("/test/charges", json={"amount_micro": 100}, headers=headers)
    clock.advance(
        timedelta(hours=app.state.context.settings.idempotency_retention_hours, seconds=1)
    )
    again = client.post("/test/charges", json={"amount_micro": 100}, headers=headers)
    assert again.json() == {"charged": 100, "left": 800}
    assert _charges(app) == 2


def _fire(count, send):
    barrier = threading.Barrier(count)

    def one(_):
        barrier.wait()
        return send()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


def test_concurrent_duplicates_produce_one_charge(app, client, live_server):
    agent = register(client)
    fund(app, agent.account_id, 10_000_000)
    headers = {**agent.headers, "Idempotency-Key": new_key()}
    with httpx.Client(base_url=live_server, timeout=30) as http:
        responses = _fire(
            12,
            lambda: http.post("/test/charges", json={"amount_micro": 1_000_000}, headers=headers),
        )
    assert {r.status_code for r in responses} == {201}
    assert {r.json()["left"] for r in responses} == {9_000_000}
    assert _charges(app) == 1


def test_concurrent_registrations_with_one_key_create_one_account(app, client, live_server):
    key = new_key()
    with httpx.Client(base_url=live_server, timeout=30) as http:
        responses = _fire(
            10,
            lambda: http.post(
                "/v1/account/register",
                json={"accepted_terms": True},
                headers={"Idempotency-Key": key},
            ),
        )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 9 + [201]
    assert len({r.json()["account_id"] for r in responses}) == 1
    assert sum("api_key" in r.json() for r in responses) == 1
    with app.state.context.db.reader() as session:
        assert session.scalar(select(func.count()).select_from(Account)) == 1


@pytest.mark.parametrize(
    "key",
    ["e2e-post-2026-11-23T08:00:00Z", "not-a-uuid", "k", "x" * 255, "a key with spaces ~!"],
)
def test_any_key_of_1_to_255_printable_ascii_characters_is_accepted(app, client, key):
    agent = register(client)
    fund(app, agent.account_id, 1_000)
    headers = {**agent.headers, "Idempotency-Key": key}
    first = client.post("/test/charges", json={"amount_micro": 10}, headers=headers)
    again = client.post("/test/charges", json={"amount_micro": 10}, headers=headers)
    assert first.status_code == again.status_code == 201, first.text
    assert first.json() == again.json() == {"charged": 10, "left": 990}
    assert _charges(app) == 1


def test_a_key_is_replayed_the_same_from_a_call_made_without_http(app, client):
    """The idempotency service takes an operation and its arguments, not a request: a call
    made through another front door with the same key and arguments replays."""
    from datetime import timedelta

    from agent_broker.idempotency.service import IdempotencyKey, fingerprint

    operation = "POST /test/charges"
    arguments = {"path": {}, "body": {"amount_micro": 10}}
    key = IdempotencyKey(
        key="door-1",
        operation=operation,
        fingerprint=fingerprint(operation, arguments),
        retention=timedelta(hours=1),
    )
    calls = []

    def compute():
        calls.append(1)
        return Outcome(201, {"n": len(calls)})

    with app.state.context.db.writer() as session:
        first = run_once(session, "acct", key, compute, now=clock.now())
        session.commit()
    with app.state.context.db.writer() as session:
        again = run_once(session, "acct", key, compute, now=clock.now())
        other = IdempotencyKey(
            key="door-1",
            operation=operation,
            fingerprint=fingerprint(operation, {"path": {}, "body": {"amount_micro": 11}}),
            retention=timedelta(hours=1),
        )
        with pytest.raises(IdempotencyKeyReuse):
            run_once(session, "acct", other, compute, now=clock.now())
    assert (first.status, first.body, first.replayed) == (201, {"n": 1}, False)
    assert (again.status, again.body, again.replayed) == (201, {"n": 1}, True)
    assert calls == [1]
