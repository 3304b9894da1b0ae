"""POST /v1/account/register: body shape, terms, idempotent replay, rate limit, client IP."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from starlette.requests import Request

from agent_broker.accounts.models import Account
from agent_broker.config import Settings
from agent_broker.http.client_ip import client_ip
from tests.support.clock import ManualClock, limit_on
from tests.support.http import assert_problem, new_key

REGISTER = "/v1/account/register"

SETUP_REQUIRED = {
    "missing": ["contact_name", "contact_email", "deal_route"],
    "blocked_actions": ["open_thread", "receive_thread"],
    "next": [
        {"action": "set_contact", "method": "PUT", "path": "/v1/account/contact"},
        {"action": "set_route", "method": "PUT", "path": "/v1/account/route"},
    ],
}


def _count_accounts(app) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(Account))


# --- the 201 -----------------------------------------------------------------------------


def test_register_returns_201_with_key_and_setup_requirements(client):
    response = client.post(REGISTER, json={"accepted_terms": True})

    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"account_id", "api_key", "existing", "account_setup_required"}
    assert str(uuid.UUID(body["account_id"])) == body["account_id"]
    assert isinstance(body["api_key"], str) and len(body["api_key"]) >= 16
    assert body["existing"] is False
    assert body["account_setup_required"] == SETUP_REQUIRED
    # The key is shown in the body only, never in a header.
    for value in response.headers.values():
        assert body["api_key"] not in value


def test_registered_key_authenticates_the_new_account(client):
    body = client.post(REGISTER, json={"accepted_terms": True}).json()

    account = client.get("/v1/account", headers={"x-api-key": body["api_key"]})

    assert account.status_code == 200, account.text
    assert account.json()["account_id"] == body["account_id"]


def test_each_registration_creates_a_distinct_account_and_key(client):
    first = client.post(REGISTER, json={"accepted_terms": True}).json()
    second = client.post(REGISTER, json={"accepted_terms": True}).json()

    assert first["account_id"] != second["account_id"]
    assert first["api_key"] != second["api_key"]


def test_balance_starts_at_zero(client):
    key = client.post(REGISTER, json={"accepted_terms": True}).json()["api_key"]

    account = client.get("/v1/account", headers={"x-api-key": key}).json()
    profile = client.get("/v1/account/profile", headers={"x-api-key": key}).json()

    assert account["balance_micro"] == 0
    assert account["held_micro"] == 0
    assert account["reputation"]["funded"] is False
    assert profile["balance_credits"] == 0


# --- terms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [{"accepted_terms": False}, {}, {"accepted_terms": None}],
    ids=["false", "missing", "null"],
)
def test_terms_not_accepted_is_428(app, client, payload):
    assert_problem(client.post(REGISTER, json=payload), 428, "terms_required")
    assert _count_accounts(app) == 0


def test_absent_body_is_428_terms_required(app, client):
    assert_problem(client.post(REGISTER), 428, "terms_required")
    assert _count_accounts(app) == 0


@pytest.mark.parametrize("value", ["true", 1, "yes", [True], {"v": True}])
def test_accepted_terms_other_than_true_is_428_whatever_its_type(app, client, value):
    assert_problem(client.post(REGISTER, json={"accepted_terms": value}), 428, "terms_required")
    assert _count_accounts(app) == 0


def test_malformed_json_is_400(app, client):
    response = client.post(
        REGISTER, content=b'{"accepted_terms": tru', headers={"content-type": "application/json"}
    )
    assert_problem(response, 400, "invalid_input")
    assert _count_accounts(app) == 0


# --- Idempotency-Key ---------------------------------------------------------------------


def test_replay_with_same_key_returns_200_existing_without_api_key(app, client):
    key = new_key()
    first = client.post(REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text
    original = first.json()

    replay = client.post(REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key})

    assert replay.status_code == 200, replay.text
    assert replay.json() == {"account_id": original["account_id"], "existing": True}
    for value in replay.headers.values():
        assert original["api_key"] not in value


def test_replay_does_not_create_a_second_account(app, client):
    key = new_key()
    original = client.post(
        REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
    ).json()
    for _ in range(2):
        replay = client.post(
            REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
        )
        assert replay.status_code == 200, replay.text

    assert _count_accounts(app) == 1
    account = client.get("/v1/account", headers={"x-api-key": original["api_key"]})
    assert account.status_code == 200, account.text
    assert account.json()["account_id"] == original["account_id"]


def test_same_key_with_a_different_body_is_409(app, client):
    key = new_key()
    first = client.post(REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key})
    assert first.status_code == 201, first.text

    reused = client.post(
        REGISTER,
        json={"accepted_terms": True, "note": "different"},
        headers={"Idempotency-Key": key},
    )

    assert_problem(reused, 409, "idempotency_key_reuse")
    assert _count_accounts(app) == 1


def test_different_keys_create_different_accounts(app, client):
    one = client.post(
        REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": new_key()}
    )
    two = client.post(
        REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": new_key()}
    )

    assert one.status_code == two.status_code == 201
    assert one.json()["account_id"] != two.json()["account_id"]
    assert _count_accounts(app) == 2


@pytest.mark.parametrize("bad_key", ["", "x" * 256, b"caf\xe9"])
def test_malformed_idempotency_key_is_400(app, client, bad_key):
    response = client.post(
        REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": bad_key}
    )
    assert_problem(response, 400, "invalid_input")
    assert _count_accounts(app) == 0


def test_refused_registration_leaves_the_key_free_for_a_corrected_retry(app, client):
    key = new_key()
    refused = client.post(
        REGISTER, json={"accepted_terms": False}, headers={"Idempotency-Key": key}
    )
    assert_problem(refused, 428, "terms_required")

    # Same key, corrected body: the refusal was not recorded, so this is a fresh request.
    retried = client.post(REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key})
    assert retried.status_code == 201, retried.text
    assert "api_key" in retried.json()


# --- rate limit per source ---------------------------------------------------------------


def test_registration_is_rate_limited_per_source_and_clears(make_app):
    app = make_app(register_rate_limit="2/2 second")
    clock = ManualClock()
    limit_on(app, clock)
    with TestClient(app, raise_server_exceptions=False) as client:
        for _ in range(2):
            ok = client.post(REGISTER, json={"accepted_terms": True})
            assert ok.status_code == 201, ok.text

        limited = client.post(REGISTER, json={"accepted_terms": True})
        body = assert_problem(limited, 429, "rate_limited")
        assert isinstance(body["retryAfterSeconds"], int)
        assert 1 <= body["retryAfterSeconds"] <= 2
        assert limited.headers["Retry-After"] == str(body["retryAfterSeconds"])
        assert _count_accounts(app) == 2

        clock.advance(2.1)

        again = client.post(REGISTER, json={"accepted_terms": True})
        assert again.status_code == 201, again.text
        assert _count_accounts(app) == 3


def test_forwarded_for_from_an_untrusted_peer_does_not_evade_the_limit(make_app):
    # The TestClient peer ("testclient") is not in the trusted range, so a varying
    # X-Forwarded-For must not make each request look like a new source.
    app = make_app(register_rate_limit="2/hour", trusted_proxies="10.0.0.0/8")
    with TestClient(app, raise_server_exceptions=False) as client:
        for hop in ("198.51.100.1", "198.51.100.2"):
            ok = client.post(
                REGISTER, json={"accepted_terms": True}, headers={"x-forwarded-for": hop}
            )
            assert ok.status_code == 201, ok.text

        limited = client.post(
            REGISTER, json={"accepted_terms": True}, headers={"x-forwarded-for": "198.51.100.3"}
        )
        assert_problem(limited, 429, "rate_limited")


def test_idempotent_replay_is_not_counted_by_the_rate_limit(make_app):
    app = make_app(register_rate_limit="2/hour")
    with TestClient(app, raise_server_exceptions=False) as client:
        key = new_key()
        first = client.post(
            REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
        )
        assert first.status_code == 201, first.text
        for _ in range(3):
            replay = client.post(
                REGISTER, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
            )
            assert replay.status_code == 200, replay.text

        second = client.post(REGISTER, json={"accepted_terms": True})
        assert second.status_code == 201, second.text
        assert_problem(client.post(REGISTER, json={"accepted_terms": True}), 429, "rate_limited")


# --- client address behind trusted proxies -----------------------------------------------


class _FakeApp:
    """Only what client_ip reads: the context's settings."""

    def __init__(self, settings: Settings) -> None:
        context = SimpleNamespace(settings=settings)
        self.state = SimpleNamespace(context=context)


def _request(peer: str, forwarded: str | None, trusted: str) -> Request:
    headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
    scope = {
        "type": "http",
        "method": "POST",
        "path": REGISTER,
        "headers": headers,
        "client": (peer, 1234),
        "app": _FakeApp(Settings(trusted_proxies=trusted)),
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "expected"),
    [
        # No proxy is trusted: the header is never believed.
        ("10.0.0.5", "198.51.100.7", "", "10.0.0.5"),
        # The peer is not a trusted proxy: its header is ignored.
        ("203.0.113.9", "198.51.100.7", "10.0.0.0/8", "203.0.113.9"),
        # Trusted peer: the rightmost hop no trusted proxy vouches for is the client.
        ("10.0.0.5", "198.51.100.7", "10.0.0.0/8", "198.51.100.7"),
        ("10.0.0.5", "198.51.100.7, 10.0.0.2", "10.0.0.0/8", "198.51.100.7"),
        # Spoofed leftmost entries written by the client are ignored.
        ("10.0.0.5", "6.6.6.6, 1.2.3.4, 198.51.100.7", "10.0.0.0/8", "198.51.100.7"),
        ("10.0.0.5", "6.6.6.6,198.51.100.7 , 10.9.9.9", "10.0.0.0/8", "198.51.100.7"),
        # Every hop trusted: the leftmost is the best available answer.
        ("10.0.0.5", "10.1.1.1, 10.2.2.2", "10.0.0.0/8", "10.1.1.1"),
        # Trusted peer with no header: the peer itself.
        ("10.0.0.5", None, "10.0.0.0/8", "10.0.0.5"),
        # A single trusted address rather than a range.
        ("10.0.0.5", "198.51.100.7", "10.0.0.5", "198.51.100.7"),
        ("10.0.0.6", "198.51.100.7", "10.0.0.5", "10.0.0.6"),
        # IPv6 proxies.
        ("2001:db8::1", "198.51.100.7, 2001:db8::2", "2001:db8::/32", "198.51.100.7"),
    ],
    ids=[
        "no-trusted-proxies",
        "untrusted-peer",
        "trusted-peer-single-hop",
        "trusted-peer-trusted-inner-hop",
        "spoofed-leftmost",
        "spoofed-leftmost-odd-spacing",
        "all-hops-trusted",
        "trusted-peer-no-header",
        "single-address-trusted",
        "single-address-other-peer",
        "ipv6-proxies",
    ],
)
def test_client_ip_believes_forwarded_for_only_from_trusted_proxies(
    peer, forwarded, trusted, expected
):
    assert client_ip(_request(peer, forwarded, trusted)) == expected


def test_a_replay_from_another_source_reveals_nothing_of_the_first_account(make_app):
    """Idempotency-Keys of registration are scoped by source address: someone else's key
    sent from elsewhere creates a fresh account and never returns the first one's id."""
    from fastapi.testclient import TestClient

    app = make_app(trusted_proxies="127.0.0.1")
    key = new_key()
    with TestClient(app, raise_server_exceptions=False, client=("127.0.0.1", 50000)) as client:
        first = client.post(
            REGISTER,
            json={"accepted_terms": True},
            headers={"Idempotency-Key": key, "X-Forwarded-For": "198.51.100.7"},
        )
        replay = client.post(
            REGISTER,
            json={"accepted_terms": True},
            headers={"Idempotency-Key": key, "X-Forwarded-For": "198.51.100.7"},
        )
        elsewhere = client.post(
            REGISTER,
            json={"accepted_terms": True},
            headers={"Idempotency-Key": key, "X-Forwarded-For": "203.0.113.9"},
        )
    assert first.status_code == 201
    assert replay.status_code == 200
    assert replay.json() == {"account_id": first.json()["account_id"], "existing": True}
    assert elsewhere.status_code == 201
    assert elsewhere.json()["account_id"] != first.json()["account_id"]
    assert "api_key" in elsewhere.json()
