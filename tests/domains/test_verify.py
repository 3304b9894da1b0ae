"""POST /v1/account/domain/verify: the proof (docs/interface.md §8), every way it fails, and
the welcome grant's rules (§8, §23): once per account, once per domain, a daily cap
that keeps a proved claim's place until the next UTC day, never real money."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker import clock
from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry, Posting
from tests.support.accounts import complete_profile, read_account, register
from tests.support.domains import (
    CHALLENGE_PATH,
    GRANT,
    challenge,
    prove,
    serve_token,
    set_route,
    verify,
)
from tests.support.http import assert_problem
from tests.support.tls import Answer


def grant_entries(app) -> list[tuple[str, int, bool]]:
    """(wallet, amount, real_money) of every domain_grant journal entry."""
    with app.state.context.db.reader() as session:
        rows = session.execute(
            select(Posting.account_code, Posting.amount_micro, JournalEntry.real_money)
            .join(JournalEntry, JournalEntry.sequence == Posting.entry_sequence)
            .where(JournalEntry.kind == "domain_grant", Posting.account_code != books.GRANTS)
        ).all()
    return [tuple(row) for row in rows]


def test_a_first_proof_pays_the_grant_once_through_the_journal(app, client, challenge_server):
    agent = register(client)
    body = prove(client, challenge_server, agent, "https://agents.dev/deals/")
    assert body == {
        "domain": "agents.dev",
        "verified": True,
        "granted": True,
        "granted_micro": GRANT,
        "detail": "Domain verified and $10.00 credited to your balance.",
    }
    seen = challenge_server.seen[-1]
    assert (seen.method, seen.path, seen.host) == ("GET", CHALLENGE_PATH, "agents.dev")
    after = read_account(client, agent)
    assert after["balance_micro"] == GRANT
    # A grant is not real money: the account stays unfunded.
    assert after["reputation"] == after["reputation"] | {"funded": False, "domain_verified": True}
    assert grant_entries(app) == [(f"wallet:{agent.account_id}", GRANT, False)]
    state = challenge(client, agent)
    assert (state["verified"], state["grant_pending"]) == (True, False)

    again = verify(client, agent)
    assert again.status_code == 200
    assert again.json()["granted"] is False and again.json()["granted_micro"] == 0
    assert "grant_reason" not in again.json()
    assert read_account(client, agent)["balance_micro"] == GRANT
    assert len(grant_entries(app)) == 1


def test_a_verified_account_is_verified_on_its_public_record(client, challenge_server):
    agent = register(client)
    handle = read_account(client, agent)["handle"]
    assert client.get(f"/v1/reputation/{handle}").json()["domain_verified"] is False
    prove(client, challenge_server, agent, "https://agents.dev/deals/")
    assert client.get(f"/v1/reputation/{handle}").json()["domain_verified"] is True


def test_the_grant_leaves_the_listing_cap_of_an_unfunded_account(client, challenge_server):
    agent = register(client)
    complete_profile(client, agent)
    prove(client, challenge_server, agent, "https://agents.dev/deals/")
    listing = {
        "title": "Translate product sheets",
        "category": "translation",
        "listing_type": "sell",
        "price_micro": 1_000_000,
        "body": "English to German, technical vocabulary, within two days.",
    }
    for n in range(4):
        response = client.post(
            "/v1/listings", json=listing, headers={**agent.headers, "Idempotency-Key": f"k{n}"}
        )
        if n < 3:
            assert response.status_code == 201, response.text
    assert_problem(response, 409, "listing_cap_reached")


def test_one_trailing_newline_is_tolerated(client, challenge_server):
    for suffix in (b"\n", b"\r\n"):
        agent = register(client)
        set_route(client, agent, "https://agents.dev/deals/")
        serve_token(challenge_server, challenge(client, agent)["token"], suffix=suffix)
        assert verify(client, agent).status_code == 200


@pytest.mark.parametrize(
    ("body", "check"),
    [
        (lambda token: token + "\n\n", "mismatch"),
        (lambda token: " " + token, "mismatch"),
        (lambda token: "\ufeff" + token, "mismatch"),
        (lambda token: token.upper(), "mismatch"),
        (lambda token: token[:-1], "mismatch"),
        (lambda token: token + "\nmore", "mismatch"),
        (lambda token: "", "mismatch"),
    ],
)
def test_a_body_other_than_the_token_fails(app, client, challenge_server, body, check):
    agent = register(client)
    set_route(client, agent, "https://agents.dev/deals/")
    token = challenge(client, agent)["token"]
    challenge_server.answer(CHALLENGE_PATH, Answer(body=body(token).encode()))
    problem = assert_problem(verify(client, agent), 400, "invalid_input")
    assert problem["check"] == check
    assert "not the token" in problem["detail"]
    assert challenge(client, agent)["verified"] is False
    assert read_account(client, agent)["balance_micro"] == 0
    assert grant_entries(app) == []


def test_another_accounts_token_fails(client, challenge_server):
    owner, other = register(client), register(client)
    set_route(client, owner, "https://agents.dev/a/")
    set_route(client, other, "https://agents.dev/b/")
    serve_token(challenge_server, challenge(client, owner)["token"])
    assert_problem(verify(client, other), 400, "invalid_input")


@pytest.mark.parametrize(
    ("answer", "check", "words"),
    [
        (Answer(status=404, body=b"missing"), "status", "answered 404"),
        (Answer(status=500), "status", "answered 500"),
        (Answer(status=204), "status", "answered 204"),
        (Answer(status=301, headers={"Location": "/elsewhere"}), "redirect", "redirect"),
        (Answer(status=302, headers={"Location": "https://buyer.dev/x"}), "redirect", "redirect"),
        (Answer(body=b"x" * 5000), "too_large", "over 4096 bytes"),
        (Answer(body=b"x" * 5000, declare_length=False), "too_large", "over 4096 bytes"),
        (Answer(body=b"\x1f\x8b", headers={"Content-Encoding": "gzip"}), "encoding", "gzip"),
    ],
)
def test_a_bad_answer_fails_with_what_was_wrong(client, challenge_server, answer, check, words):
    agent = register(client)
    set_route(client, agent, "https://agents.dev/deals/")
    token = challenge(client, agent)["token"]
    if answer.status in (301, 302):  # the redirect's target would have served the token
        challenge_server.answer("/elsewhere", Answer(body=token.encode()))
    challenge_server.answer(CHALLENGE_PATH, answer)
    problem = assert_problem(verify(client, agent), 400, "invalid_input")
    assert problem["check"] == check
    assert words in problem["detail"]
    assert "/elsewhere" not in challenge_server.paths_seen()
    assert challenge(client, agent)["verified"] is False


def test_a_domain_resolving_to_a_private_address_is_not_fetched(make_domain_app, challenge_server):
    with TestClient(make_domain_app(allow_private_fetch=False)) as client:
        agent = register(client)
        set_route(client, agent, "https://agents.dev/deals/")
        serve_token(challenge_server, challenge(client, agent)["token"])
        problem = assert_problem(verify(client, agent), 400, "invalid_input")
    assert problem["check"] == "address_refused"
    assert "127.0.0.1" in problem["detail"] and "loopback" in problem["detail"]
    assert challenge_server.seen == []


def test_a_certificate_not_trusted_fails_as_tls(make_domain_app, challenge_server):
    with TestClient(make_domain_app(outbound_ca_bundle="")) as client:
        agent = register(client)
        set_route(client, agent, "https://agents.dev/deals/")
        serve_token(challenge_server, challenge(client, agent)["token"])
        problem = assert_problem(verify(client, agent), 400, "invalid_input")
    assert problem["check"] == "tls"


def test_an_unreachable_domain_fails_as_unreachable(make_domain_app, outbound_settings):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = make_domain_app(outbound_resolve=f"agents.dev=127.0.0.1:{port}")
    with TestClient(app) as client:
        agent = register(client)
        set_route(client, agent, "https://agents.dev/deals/")
        problem = assert_problem(verify(client, agent), 400, "invalid_input")
    assert problem["check"] == "unreachable"


def test_verify_without_a_route_or_registrable_domain_is_refused(client, challenge_server):
    agent = register(client)
    assert_problem(verify(client, agent), 409, "missing_deal_route_self")
    set_route(client, agent, "https://203.0.113.9/deals/")
    assert_problem(verify(client, agent), 400, "invalid_input")
    assert challenge_server.seen == []


def test_verify_is_rate_limited_per_account_and_failures_count(make_domain_app, challenge_server):
    with TestClient(make_domain_app(domain_verify_rate_limit="3/hour")) as client:
        agent, other = register(client), register(client)
        set_route(client, agent, "https://agents.dev/deals/")
        set_route(client, other, "https://buyer.dev/deals/")
        for _ in range(3):  # nothing served: each attempt fails, and counts
            assert_problem(verify(client, agent), 400, "invalid_input")
        serve_token(challenge_server, challenge(client, agent)["token"])
        problem = assert_problem(verify(client, agent), 429, "rate_limited")
        assert problem["retryAfterSeconds"] >= 1
        assert challenge_server.paths_seen().count(CHALLENGE_PATH) == 3
        # Another account has its own budget.
        serve_token(challenge_server, challenge(client, other)["token"])
        assert verify(client, other).status_code == 200


def test_a_domain_pays_once_even_to_another_account(app, client, challenge_server):
    first, second = register(client), register(client)
    assert prove(client, challenge_server, first, "https://agents.dev/a/")["granted"] is True
    body = prove(client, challenge_server, second, "https://www.agents.dev/b/")
    assert (body["verified"], body["granted"], body["granted_micro"]) == (True, False, 0)
    assert "grant_reason" not in body
    assert "agents.dev" in body["detail"]
    # The proof still counts for the second account; only the credit is not paid again.
    assert read_account(client, second)["reputation"]["domain_verified"] is True
    assert read_account(client, second)["balance_micro"] == 0
    assert challenge(client, second)["grant_pending"] is False
    assert len(grant_entries(app)) == 1


def test_an_account_gets_one_grant_however_many_domains_it_proves(app, client, challenge_server):
    agent = register(client)
    assert prove(client, challenge_server, agent, "https://agents.dev/a/")["granted"] is True
    body = prove(client, challenge_server, agent, "https://buyer.dev/a/")
    assert (body["domain"], body["granted"]) == ("buyer.dev", False)
    assert read_account(client, agent)["balance_micro"] == GRANT
    # buyer.dev was proved by an account that had its grant: it stays free to pay another.
    other = register(client)
    assert prove(client, challenge_server, other, "https://buyer.dev/b/")["granted"] is True
    assert len(grant_entries(app)) == 2


def test_a_deployment_granting_nothing_still_verifies(make_domain_app, challenge_server):
    app = make_domain_app(domain_grant_micro=0)
    with TestClient(app) as client:
        agent = register(client)
        body = prove(client, challenge_server, agent, "https://agents.dev/a/")
        assert (body["granted"], body["granted_micro"]) == (False, 0)
        assert "grant_reason" not in body
        assert challenge(client, agent)["grant_pending"] is False
        assert read_account(client, agent)["reputation"]["domain_verified"] is True
    assert grant_entries(app) == []


def test_the_daily_cap_keeps_a_claim_pending_until_the_next_utc_day(
    make_domain_app, challenge_server
):
    # Start just before midnight UTC so that "tomorrow" is minutes away.
    real = datetime.now(UTC)
    clock.advance(
        datetime.combine(real.date() + timedelta(days=1), datetime.min.time(), UTC)
        - timedelta(minutes=5)
        - real
    )
    app = make_domain_app(domain_grant_daily_cap=1)
    with TestClient(app) as client:
        first, second = register(client), register(client)
        assert prove(client, challenge_server, first, "https://agents.dev/a/")["granted"] is True
        capped = prove(client, challenge_server, second, "https://buyer.dev/a/")
        assert capped == capped | {
            "verified": True,
            "granted": False,
            "granted_micro": 0,
            "grant_reason": "grant_cap_reached",
        }
        assert "00:00 UTC" in capped["detail"]
        state = challenge(client, second)
        assert (state["verified"], state["grant_pending"]) == (True, True)
        # The same day: still held back.
        again = verify(client, second).json()
        assert (again["granted"], again["grant_reason"]) == (False, "grant_cap_reached")

        # The pending claim keeps its place: a third account proving the same domain
        # before it is paid does not take the grant.
        third = register(client)
        later = prove(client, challenge_server, third, "https://buyer.dev/b/")
        assert later["granted"] is False and "grant_reason" not in later

        fetched = len(challenge_server.seen)
        clock.advance(timedelta(minutes=6))  # past 00:00 UTC
        collected = verify(client, second).json()
        assert (collected["granted"], collected["granted_micro"]) == (True, GRANT)
        assert "grant_reason" not in collected
        # The domain was proved already: collecting fetched nothing.
        assert len(challenge_server.seen) == fetched
        assert challenge(client, second)["grant_pending"] is False
        assert read_account(client, second)["balance_micro"] == GRANT
        assert read_account(client, third)["balance_micro"] == 0
    assert len(grant_entries(app)) == 2


def test_a_cap_of_zero_pays_nobody_but_keeps_every_claim(make_domain_app, challenge_server):
    app = make_domain_app(domain_grant_daily_cap=0)
    with TestClient(app) as client:
        agent = register(client)
        body = prove(client, challenge_server, agent, "https://agents.dev/a/")
        assert body["grant_reason"] == "grant_cap_reached"
        assert challenge(client, agent)["grant_pending"] is True
    assert grant_entries(app) == []


def test_the_openapi_document_describes_both_routes(client):
    paths = client.get("/openapi.json").json()["paths"]
    challenge_op = paths["/v1/account/domain"]["get"]
    verify_op = paths["/v1/account/domain/verify"]["post"]
    assert {"200", "401", "409"} <= set(challenge_op["responses"])
    assert {"200", "400", "401", "409", "429"} <= set(verify_op["responses"])
    assert "402" not in verify_op["responses"]
