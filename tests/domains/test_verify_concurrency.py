"""Concurrent domain proofs through a real server: the database, not the order requests
happen to arrive in, keeps the welcome grant to once per account, once per domain and
the day's cap. Every challenge fetch is held at the local HTTPS server until all the
racing requests have fetched, so their write transactions really do overlap."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry, Posting
from tests.support.accounts import Agent, read_account, register
from tests.support.domains import CHALLENGE_PATH, GRANT, challenge, set_route
from tests.support.http import serving, wait_until
from tests.support.tls import Answer

# One route per registrable domain the server can answer for.
ROUTES = (
    "https://agents.dev/deals/",
    "https://buyer.dev/deals/",
    "https://shop.example.co.uk/deals/",
    "https://third.dev/deals/",
)
HELD = 30.0  # how long the server holds an answer unless released (never reached)


@pytest.fixture
def app(make_domain_app: Callable[..., FastAPI]) -> FastAPI:
    return make_domain_app(domain_verify_rate_limit="1000/hour")


def _verify_in_thread(pool: ThreadPoolExecutor, base_url: str, agent: Agent) -> Future:
    def call() -> httpx.Response:
        with httpx.Client(base_url=base_url, timeout=60) as http:
            return http.post("/v1/account/domain/verify", headers=agent.headers)

    return pool.submit(call)


def _agent_on(http: httpx.Client, route: str) -> tuple[Agent, str]:
    """A new account with `route` as its deal route, and its challenge token."""
    agent = register(http)
    set_route(http, agent, route)
    return agent, challenge(http, agent)["token"]


def _grant_entries(app: FastAPI, account_id: str | None = None) -> tuple[int, int]:
    """(count, total µUSD) of the domain_grant journal entries, paid to one wallet or to
    any (counted on the grants book's side)."""
    code = books.wallet_code(account_id) if account_id else books.GRANTS
    sign = 1 if account_id else -1
    with app.state.context.db.reader() as session:
        count, total = session.execute(
            select(
                func.count(JournalEntry.sequence), func.coalesce(func.sum(Posting.amount_micro), 0)
            )
            .join(Posting, Posting.entry_sequence == JournalEntry.sequence)
            .where(JournalEntry.kind == "domain_grant", Posting.account_code == code)
        ).one()
    return int(count), sign * int(total)


def test_concurrent_verifies_of_one_account_pay_the_grant_once(app, live_server, challenge_server):
    racers = 8
    with httpx.Client(base_url=live_server, timeout=60) as http:
        agent, token = _agent_on(http, ROUTES[0])
        # Every fetch is held until all of them arrived: all requests passed the
        # "already proved?" read and race in their write transactions.
        challenge_server.answer(CHALLENGE_PATH, Answer(body=token.encode(), delay_seconds=HELD))
        with ThreadPoolExecutor(max_workers=racers) as pool:
            futures = [_verify_in_thread(pool, live_server, agent) for _ in range(racers)]
            wait_until(
                lambda: len(challenge_server.seen) == racers, f"{racers} fetches were in flight"
            )
            challenge_server.release.set()
            responses = [f.result(timeout=60) for f in futures]

        for response in responses:
            assert response.status_code == 200, response.text
            assert response.json()["verified"] is True
            assert response.json()["domain"] == "agents.dev"
        granted = [r.json() for r in responses if r.json()["granted"]]
        assert len(granted) == 1, [r.json() for r in responses]
        assert granted[0]["granted_micro"] == GRANT
        for response in responses:
            if not response.json()["granted"]:
                assert response.json()["granted_micro"] == 0
                assert "grant_reason" not in response.json()

        account = read_account(http, agent)
        assert (account["balance_micro"], account["held_micro"]) == (GRANT, 0)
        assert account["reputation"]["domain_verified"] is True
        assert _grant_entries(app, agent.account_id) == (1, GRANT)
        assert _grant_entries(app) == (1, GRANT)
        state = challenge(http, agent)
        assert (state["verified"], state["grant_pending"]) == (True, False)


def test_two_accounts_claiming_one_domain_at_once_earn_one_grant(
    app, live_server, challenge_server
):
    with httpx.Client(base_url=live_server, timeout=60) as http:
        first, first_token = _agent_on(http, "https://agents.dev/a/")
        second, second_token = _agent_on(http, "https://agents.dev/b/")
        assert first_token != second_token
        # Each fetch gets the token of the account that made it (they arrive in turn).
        challenge_server.answer_in_turn(
            CHALLENGE_PATH,
            Answer(body=first_token.encode(), delay_seconds=HELD),
            Answer(body=second_token.encode(), delay_seconds=HELD),
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            first_call = _verify_in_thread(pool, live_server, first)
            wait_until(lambda: len(challenge_server.seen) == 1, "the first fetch arrived")
            second_call = _verify_in_thread(pool, live_server, second)
            wait_until(lambda: len(challenge_server.seen) == 2, "the second fetch arrived")
            challenge_server.release.set()
            responses = [first_call.result(timeout=60), second_call.result(timeout=60)]

        for response in responses:
            assert response.status_code == 200, response.text
            assert response.json()["verified"] is True
            assert response.json()["domain"] == "agents.dev"
        outcomes = [r.json()["granted"] for r in responses]
        assert sorted(outcomes) == [False, True], [r.json() for r in responses]
        loser = next(r.json() for r in responses if not r.json()["granted"])
        assert loser["granted_micro"] == 0
        assert "grant_reason" not in loser  # not the cap: the domain already earned one

        assert _grant_entries(app) == (1, GRANT)
        balances = []
        for agent in (first, second):
            account = read_account(http, agent)
            assert account["reputation"]["domain_verified"] is True
            balances.append(account["balance_micro"])
            state = challenge(http, agent)
            assert (state["verified"], state["grant_pending"]) == (True, False)
        assert sorted(balances) == [0, GRANT]
        winner = (first, second)[outcomes.index(True)]
        assert _grant_entries(app, winner.account_id) == (1, GRANT)


def test_the_daily_cap_holds_under_concurrent_verifies(make_domain_app, challenge_server):
    app = make_domain_app(domain_verify_rate_limit="1000/hour", domain_grant_daily_cap=2)
    with (
        serving(app) as (live_server, _port),
        httpx.Client(base_url=live_server, timeout=60) as http,
    ):
        agents, tokens = zip(*(_agent_on(http, route) for route in ROUTES), strict=True)
        assert [challenge(http, a)["domain"] for a in agents] == [
            "agents.dev",
            "buyer.dev",
            "example.co.uk",
            "third.dev",
        ]
        # The server answers by path, not host: the requests are started one after the
        # other so that each one's fetch gets its own account's token.
        challenge_server.answer_in_turn(
            CHALLENGE_PATH, *(Answer(body=t.encode(), delay_seconds=HELD) for t in tokens)
        )
        with ThreadPoolExecutor(max_workers=len(agents)) as pool:
            calls = []
            for n, agent in enumerate(agents, start=1):
                calls.append(_verify_in_thread(pool, live_server, agent))
                wait_until(lambda n=n: len(challenge_server.seen) == n, f"fetch {n} arrived")
            assert [s.host for s in challenge_server.seen] == [
                "agents.dev",
                "buyer.dev",
                "example.co.uk",
                "third.dev",
            ]
            challenge_server.release.set()
            responses = [c.result(timeout=60) for c in calls]

        for response in responses:
            assert response.status_code == 200, response.text
            assert response.json()["verified"] is True
        bodies = [r.json() for r in responses]
        paid = [i for i, b in enumerate(bodies) if b["granted"]]
        held = [i for i, b in enumerate(bodies) if not b["granted"]]
        assert len(paid) == 2, bodies
        for i in paid:
            assert bodies[i]["granted_micro"] == GRANT
            assert "grant_reason" not in bodies[i]
        for i in held:
            assert bodies[i]["granted_micro"] == 0
            assert bodies[i]["grant_reason"] == "grant_cap_reached", bodies[i]

        assert _grant_entries(app) == (2, 2 * GRANT)
        for i, agent in enumerate(agents):
            state = challenge(http, agent)
            account = read_account(http, agent)
            assert state["verified"] is True
            assert account["reputation"]["domain_verified"] is True
            if i in paid:
                assert state["grant_pending"] is False
                assert account["balance_micro"] == GRANT
                assert _grant_entries(app, agent.account_id) == (1, GRANT)
            else:
                assert state["grant_pending"] is True
                assert account["balance_micro"] == 0
                assert _grant_entries(app, agent.account_id) == (0, 0)
