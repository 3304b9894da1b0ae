"""A verify waiting on a slow challenge server holds no transaction, no write gate and no
database connection: other requests' writes and reads go through while it waits.

If the fetch ran inside the verify's write transaction, on SQLite every other write would
queue behind the write gate for the whole held fetch, and with a pool of one session
(PostgreSQL) every other request would wait for the verify's session."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import httpx
from fastapi import FastAPI

from tests.support.accounts import Agent, fund, register
from tests.support.domains import CHALLENGE_PATH, GRANT, challenge, set_route
from tests.support.http import new_key, serving, wait_until
from tests.support.market import FEE, LISTING
from tests.support.tls import Answer, TLSServer

HOLD = 5.0  # how long the challenge server holds its answer
PROMPT = 2.0  # what "promptly" allows a request made meanwhile (the hold is 2.5 times that)


def _timed(call: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


@contextmanager
def _verify_held(
    base_url: str, server: TLSServer, agent: Agent, token: str
) -> Iterator[tuple[Future, float]]:
    """Start agent's verify against a challenge server that holds its answer for HOLD
    seconds; yield (the pending call, when the fetch reached the server) once it has."""
    server.answer(CHALLENGE_PATH, Answer(body=token.encode(), delay_seconds=HOLD))

    def call() -> httpx.Response:
        with httpx.Client(base_url=base_url, timeout=60) as http:
            return http.post("/v1/account/domain/verify", headers=agent.headers)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(call)
        wait_until(lambda: len(server.seen) == 1, "the challenge fetch reached the server")
        yield pending, time.monotonic()


def _assert_verified(pending: Future) -> None:
    response = pending.result(timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["verified"], body["granted"], body["granted_micro"]) == (True, True, GRANT)


def test_other_writes_proceed_while_a_verify_waits_on_its_fetch(app, live_server, challenge_server):
    with httpx.Client(base_url=live_server, timeout=60) as http:
        prover = register(http)
        set_route(http, prover, "https://agents.dev/deals/")
        token = challenge(http, prover)["token"]
        seller = register(http)
        fund(app, seller.account_id, 10 * FEE, real_money=True)

        with _verify_held(live_server, challenge_server, prover, token) as (pending, fetched):
            newcomer_response, register_took = _timed(
                lambda: http.post("/v1/account/register", json={"accepted_terms": True})
            )
            assert newcomer_response.status_code == 201, newcomer_response.text
            newcomer = Agent(
                newcomer_response.json()["account_id"], newcomer_response.json()["api_key"]
            )
            contact, contact_took = _timed(
                lambda: http.put(
                    "/v1/account/contact",
                    headers=newcomer.headers,
                    json={"contact_name": "Ops Team", "contact_email": "ops@buyer.dev"},
                )
            )
            assert contact.status_code == 204, contact.text
            listing, listing_took = _timed(
                lambda: http.post(
                    "/v1/listings",
                    json=LISTING,
                    headers={**seller.headers, "Idempotency-Key": new_key()},
                )
            )
            assert listing.status_code == 201, listing.text
            took = {"register": register_took, "contact": contact_took, "listing": listing_took}
            assert max(took.values()) < PROMPT, took
            # All of it happened while the fetch was still held.
            assert not pending.done(), "the verify finished before the other writes were made"
            assert time.monotonic() - fetched < HOLD
            _assert_verified(pending)
        assert time.monotonic() - fetched >= HOLD - 0.5  # the answer really was held

        account = http.get("/v1/account", headers=seller.headers).json()
        assert account["balance_micro"] == 9 * FEE
        assert http.get("/v1/account", headers=prover.headers).json()["balance_micro"] == GRANT


def test_a_verify_waiting_on_its_fetch_holds_no_database_connection(
    make_domain_app: Callable[..., FastAPI], challenge_server
):
    # One session for the whole process (PostgreSQL: one session slot): a verify holding
    # it over the network would make every other request wait for the fetch.
    app = make_domain_app(db_pool_size=1)
    with serving(app) as (base_url, _port), httpx.Client(base_url=base_url, timeout=60) as http:
        prover = register(http)
        set_route(http, prover, "https://agents.dev/deals/")
        token = challenge(http, prover)["token"]
        other = register(http)

        with _verify_held(base_url, challenge_server, prover, token) as (pending, _fetched):
            # Nothing else is in flight: no connection is checked out of the pool.
            assert app.state.context.db.engine.pool.checkedout() == 0
            reads = []
            for agent in (other, prover):
                response, took = _timed(
                    lambda agent=agent: http.get("/v1/account", headers=agent.headers)
                )
                assert response.status_code == 200, response.text
                reads.append(took)
            written, write_took = _timed(
                lambda: http.put(
                    "/v1/account/contact",
                    headers=other.headers,
                    json={"contact_name": "Ops Team", "contact_email": "ops@buyer.dev"},
                )
            )
            assert written.status_code == 204, written.text
            assert max(*reads, write_took) < PROMPT, (reads, write_took)
            assert not pending.done(), "the verify finished before the other requests were made"
            assert app.state.context.db.engine.pool.checkedout() == 0
            _assert_verified(pending)
        assert http.get("/v1/account", headers=prover.headers).json()["balance_micro"] == GRANT
