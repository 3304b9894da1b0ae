"""Dashboard sessions (agent_broker/auth/, http/jwt_bearer.py): an identity-provider
JWT reaches the account its identity (issuer, subject) is linked to, on the routes that
accept a session and on no other; a link is made once, by a call carrying both the session
and the account's key (or by the operator's CLI), and never moves."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import types
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from joserfc import jwk
from pydantic import ValidationError
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.config import Settings
from agent_broker.http import jwt_bearer
from tests.support.accounts import fund, register
from tests.support.http import assert_problem, new_key
from tests.support.identity import (
    AUDIENCE,
    ISSUER,
    KID,
    bearer,
    claims,
    idp_settings,
    sign,
    unsigned,
    write_jwks,
)
from tests.support.market import LISTING
from tests.support.paseto import RFC8032_SEED_HEX
from tests.support.tls import Answer, tls_server

STRONG = "a" * 40


def account_of(client: TestClient, headers: dict[str, str]):
    return client.get("/v1/account", headers=headers)


# --- linking ---------------------------------------------------------------------------------


def test_a_session_reaches_its_account_once_linked_by_a_call_with_the_key(client, session_token):
    agent = register(client)
    session = bearer(session_token())

    before = assert_problem(account_of(client, session), 401, "unauthorized")
    assert "x-api-key" in before["detail"] and "not linked" in before["detail"]

    both = account_of(client, {**session, **agent.headers})
    assert both.status_code == 200, both.text
    assert both.json()["account_id"] == agent.account_id

    alone = account_of(client, session)
    assert alone.status_code == 200, alone.text
    assert alone.json()["account_id"] == agent.account_id

    # A fresh token for the same subject reaches it too: the link is the identity's.
    again = account_of(client, bearer(session_token()))
    assert again.json()["account_id"] == agent.account_id

    contact = {"contact_name": "Dash Board", "contact_email": "dash@agents.dev"}
    assert client.put("/v1/account/contact", json=contact, headers=session).status_code == 204
    profile = client.get("/v1/account/profile", headers=session)
    assert profile.status_code == 200, profile.text
    assert profile.json()["account_id"] == agent.account_id
    assert profile.json()["contact"]["contact_email"] == "dash@agents.dev"
    # The write through the session reached the key's account.
    by_key = client.get("/v1/account/profile", headers=agent.headers).json()
    assert by_key["contact"]["contact_name"] == "Dash Board"

    route = {"deal_route": "https://agents.dev/deals/", "route_protocol_binding": "JSONRPC"}
    assert client.put("/v1/account/route", json=route, headers=session).status_code == 204
    domain = client.get("/v1/account/domain", headers=session)
    assert domain.status_code == 200, domain.text


def test_the_domain_challenge_authenticates_a_session_before_checking_the_route(client, linked):
    _, session = linked
    # 409 (not 401): the session authenticated, and the account has no deal route yet.
    assert_problem(
        client.get("/v1/account/domain", headers=session), 409, "missing_deal_route_self"
    )


def test_an_unlinked_identity_never_reaches_an_account(client, linked, session_token):
    stranger = bearer(session_token("operator-2"))
    assert_problem(account_of(client, stranger), 401, "unauthorized")
    assert_problem(client.get("/v1/account/profile", headers=stranger), 401, "unauthorized")


def test_a_link_needs_a_recognised_key(client, session_token):
    register(client)
    session = bearer(session_token())
    bad_key = {"x-api-key": "ab_live_" + "0" * 32}
    assert_problem(account_of(client, {**session, **bad_key}), 401, "unauthorized")
    # Nothing was linked.
    assert_problem(account_of(client, session), 401, "unauthorized")


# --- key-only routes ---------------------------------------------------------------------------


def test_key_only_routes_refuse_a_linked_session(app, client, linked):
    agent, session = linked
    fund(app, agent.account_id, 10_000_000, real_money=True)
    listing = {**session, "Idempotency-Key": new_key()}
    for response in (
        client.get("/v1/feed", headers=session),
        client.post("/v1/listings", json=LISTING, headers=listing),
        client.get("/v1/listings/mine", headers=session),
    ):
        assert_problem(response, 401, "unauthorized")
    # The same calls with the key succeed: the refusal is the session's.
    assert client.get("/v1/feed", headers=agent.headers).status_code == 200
    assert client.get("/v1/listings/mine", headers=agent.headers).status_code == 200


def test_key_only_routes_ignore_the_authorization_header(app, client):
    agent = register(client)
    fund(app, agent.account_id, 10_000_000, real_money=True)
    junk = {"Authorization": "Bearer not-a-jwt", **agent.headers}
    assert client.get("/v1/feed", headers=junk).status_code == 200
    posted = client.post(
        "/v1/listings", json=LISTING, headers={**junk, "Idempotency-Key": new_key()}
    )
    assert posted.status_code == 201, posted.text
    assert client.get("/v1/listings/mine", headers=junk).status_code == 200


# --- invalid tokens ----------------------------------------------------------------------------


def _hs256_with_public_key(public_pem: bytes) -> str:
    """Algorithm confusion: HMAC keyed with the provider's public key bytes."""

    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

    header = part(json.dumps({"alg": "HS256", "typ": "JWT", "kid": KID}).encode())
    payload = part(json.dumps(claims()).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{part(signature)}"


def _invalid_tokens(idp_key, rogue_key):
    now = int(clock.now().timestamp())
    ec_key = jwk.ECKey.generate_key("P-256", parameters={"kid": KID})
    stranger_key = jwk.RSAKey.generate_key(2048, parameters={"kid": "no-such-kid"})
    valid = sign(claims(), idp_key)
    head, body, signature = valid.split(".")
    flipped = signature[:-4] + ("AAAA" if signature[-4:] != "AAAA" else "BBBB")
    return {
        "not yet valid": sign(claims(nbf=now + 120), idp_key),
        "issued in the future": sign(claims(iat=now + 3600, exp=now + 7200), idp_key),
        "wrong issuer": sign(claims(iss="https://evil.test/"), idp_key),
        "issuer without its slash": sign(claims(iss=ISSUER.rstrip("/")), idp_key),
        "wrong audience": sign(claims(aud="another-app"), idp_key),
        "no audience": sign(claims(aud=None), idp_key),
        "no issuer": sign(claims(iss=None), idp_key),
        "no expiry": sign(claims(exp=None), idp_key),
        "missing sub": sign(claims(sub=None), idp_key),
        "empty sub": sign(claims(sub=""), idp_key),
        "numeric sub": sign(claims(sub=12345), idp_key),
        "another key with the same kid": sign(claims(), rogue_key),
        "tampered signature": f"{head}.{body}.{flipped}",
        "HS256 keyed with the public key": _hs256_with_public_key(idp_key.as_pem(private=False)),
        "alg none": unsigned(claims(), kid=KID),
        "alg none with a signature": unsigned(claims(), kid=KID) + signature,
        "RS384": sign(claims(), idp_key, alg="RS384"),
        "ES256": sign(claims(), ec_key, alg="ES256"),
        "unknown kid": sign(claims(), stranger_key),
        "garbage": "garbage",
        "three garbage parts": "a.b.c",
        "header not an object": base64.urlsafe_b64encode(b"[1]").decode().rstrip("=") + ".e30.",
        "header nested past any header's depth": (
            base64.urlsafe_b64encode(b"[" * 3000 + b"]" * 3000).decode().rstrip("=") + ".e30."
        ),
        "too long": sign(claims(padding="x" * 20_000), idp_key),
    }


def test_invalid_sessions_are_401_and_never_echo_the_token(client, linked, idp_key, rogue_key):
    """operator-1 is linked, so each token below would reach the account if its check
    were gone; each is refused alone and alongside the account's own key."""
    agent, _ = linked
    for why, token in _invalid_tokens(idp_key, rogue_key).items():
        for headers in (bearer(token), {**bearer(token), **agent.headers}):
            response = account_of(client, headers)
            assert response.status_code == 401, (why, response.text)
            body = assert_problem(response, 401, "unauthorized")
            assert token not in response.text, why
            for piece in token.split("."):
                if len(piece) > 8:
                    assert piece not in body["detail"], why


def test_expiry_is_checked_against_the_service_clock_with_a_minutes_leeway(
    client, linked, session_token
):
    token = bearer(session_token())  # exp = now + 300
    clock.advance(timedelta(seconds=300 + 30))  # past exp, within the leeway
    assert account_of(client, token).status_code == 200
    clock.advance(timedelta(seconds=45))  # 75 s past exp
    body = assert_problem(account_of(client, token), 401, "unauthorized")
    assert "expired" in body["detail"]


def test_not_before_allows_a_minutes_leeway(client, linked, session_token):
    now = int(clock.now().timestamp())
    assert account_of(client, bearer(session_token(nbf=now + 30))).status_code == 200
    assert_problem(account_of(client, bearer(session_token(nbf=now + 90))), 401, "unauthorized")
    clock.advance(timedelta(seconds=60))
    assert account_of(client, bearer(session_token(nbf=now + 90))).status_code == 200


def test_an_audience_list_naming_the_dashboard_is_accepted(client, linked, session_token):
    token = session_token(aud=["some-other-app", AUDIENCE])
    assert account_of(client, bearer(token)).status_code == 200


# --- conflicts and moves -----------------------------------------------------------------------


def test_an_identity_linked_to_one_account_conflicts_with_anothers_key(client, linked):
    a, session = linked
    b = register(client)
    assert_problem(account_of(client, {**session, **b.headers}), 409, "identity_conflict")
    assert_problem(
        client.post("/dashboard/keys/rotate", headers={**session, **b.headers}),
        409,
        "identity_conflict",
    )
    # B's key alone is untouched, and the session still reaches A.
    assert account_of(client, b.headers).json()["account_id"] == b.account_id
    assert account_of(client, session).json()["account_id"] == a.account_id


def test_two_identities_may_reach_one_account_but_one_never_moves(client, linked, session_token):
    a, first = linked
    second = bearer(session_token("operator-2"))
    assert account_of(client, {**second, **a.headers}).status_code == 200
    assert account_of(client, second).json()["account_id"] == a.account_id
    assert account_of(client, first).json()["account_id"] == a.account_id

    b = register(client)
    for session in (first, second):
        assert_problem(account_of(client, {**session, **b.headers}), 409, "identity_conflict")
        assert account_of(client, session).json()["account_id"] == a.account_id


def test_the_same_subject_from_another_issuer_is_another_identity(
    make_app, tmp_path, idp_key, linked, client
):
    """The link is per (issuer, subject): a second deployment trusting another issuer
    with the same database does not inherit operator-1's link."""
    other = make_app(
        idp_issuer="https://other-idp.test/",
        idp_audience=AUDIENCE,
        idp_jwks_url=f"file://{write_jwks(tmp_path / 'other.json', idp_key)}",
    )
    token = sign(claims(iss="https://other-idp.test/"), idp_key)
    with TestClient(other, raise_server_exceptions=False) as other_client:
        assert_problem(account_of(other_client, bearer(token)), 401, "unauthorized")


# --- sessions off ------------------------------------------------------------------------------


def test_without_an_identity_provider_a_bearer_is_refused_and_the_key_still_works(
    make_app, session_token
):
    plain = make_app()
    with TestClient(plain, raise_server_exceptions=False) as plain_client:
        agent = register(plain_client)
        session = bearer(session_token())
        body = assert_problem(account_of(plain_client, session), 401, "unauthorized")
        assert "not enabled" in body["detail"]
        assert_problem(account_of(plain_client, {**session, **agent.headers}), 401, "unauthorized")
        assert account_of(plain_client, agent.headers).status_code == 200


# --- key set refresh ---------------------------------------------------------------------------


class Monotonic:
    """jwt_bearer's view of time.monotonic, movable by the test (only that module's)."""

    def __init__(self) -> None:
        import time

        self._real = time.monotonic
        self.offset = 0.0

    def monotonic(self) -> float:
        return self._real() + self.offset


@pytest.fixture
def idp_time(monkeypatch) -> Monotonic:
    moved = Monotonic()
    monkeypatch.setattr(jwt_bearer, "time", types.SimpleNamespace(monotonic=moved.monotonic))
    return moved


@pytest.fixture
def jwks_reads(monkeypatch, jwks_path) -> list[Path]:
    reads: list[Path] = []
    real = Path.read_bytes

    def counting(self: Path) -> bytes:
        if self == jwks_path:
            reads.append(self)
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    return reads


def test_a_rotated_provider_key_is_fetched_on_its_unknown_kid_at_most_every_30_s(
    client, jwks_path, next_idp_key, idp_key, idp_time, jwks_reads
):
    agent = register(client)
    old = bearer(sign(claims(), idp_key))
    assert account_of(client, {**old, **agent.headers}).status_code == 200
    assert len(jwks_reads) == 1

    write_jwks(jwks_path, next_idp_key)  # the provider rotates to idp-2
    new = bearer(sign(claims(), next_idp_key))
    idp_time.offset = 10
    for _ in range(3):  # unknown kid within 30 s of the last fetch: no re-read
        assert_problem(account_of(client, new), 401, "unauthorized")
    assert len(jwks_reads) == 1
    # Cached keys still serve the old kid meanwhile.
    assert account_of(client, old).status_code == 200

    idp_time.offset = 31
    assert account_of(client, new).json()["account_id"] == agent.account_id
    assert len(jwks_reads) == 2
    # Known kid: no further reads.
    assert account_of(client, new).status_code == 200
    assert len(jwks_reads) == 2
    # The old key left the set that was read: its tokens fail now.
    assert_problem(account_of(client, old), 401, "unauthorized")


def test_an_unknown_kid_refetches_immediately_when_the_interval_is_zero(
    client, monkeypatch, jwks_path, next_idp_key, linked, jwks_reads
):
    monkeypatch.setattr(jwt_bearer, "REFETCH_SECONDS", 0.0)
    write_jwks(jwks_path, next_idp_key)
    assert account_of(client, bearer(sign(claims(), next_idp_key))).status_code == 200


def test_the_cached_key_set_is_read_again_after_ten_minutes(
    client, jwks_path, next_idp_key, idp_key, idp_time, jwks_reads, linked
):
    old = bearer(sign(claims(), idp_key))
    reads = len(jwks_reads)
    write_jwks(jwks_path, next_idp_key)
    idp_time.offset = 590
    assert account_of(client, old).status_code == 200  # cached
    assert len(jwks_reads) == reads
    idp_time.offset = 601
    assert_problem(account_of(client, old), 401, "unauthorized")  # stale: read again
    assert len(jwks_reads) == reads + 1


def test_an_unreadable_key_set_file_is_401_and_says_so(client, jwks_path, linked, idp_time):
    jwks_path.write_text("this is not json")
    idp_time.offset = 700  # stale: read again
    body = assert_problem(account_of(client, linked[1]), 401, "unauthorized")
    assert "key set" in body["detail"]


def test_a_missing_key_set_file_is_401_not_a_server_error(client, jwks_path, linked, idp_time):
    jwks_path.unlink()
    idp_time.offset = 700
    assert_problem(account_of(client, linked[1]), 401, "unauthorized")


# --- key set over https ------------------------------------------------------------------------


def test_a_key_set_served_over_https_is_fetched_through_the_operator_client(
    make_app, tmp_path, idp_key, session_token
):
    jwks = json.dumps({"keys": [idp_key.as_dict(private=False)]}).encode()
    with tls_server(tmp_path, "127.0.0.1") as server:
        server.answer("/jwks.json", Answer(body=jwks, headers={"Content-Type": "application/json"}))
        served = make_app(
            **idp_settings(f"https://127.0.0.1:{server.port}/jwks.json"),
            outbound_ca_bundle=str(server.ca_path),
        )
        with TestClient(served, raise_server_exceptions=False) as https_client:
            agent = register(https_client)
            session = bearer(session_token())
            assert account_of(https_client, {**session, **agent.headers}).status_code == 200
            alone = account_of(https_client, session)
            assert alone.json()["account_id"] == agent.account_id
    assert server.paths_seen() == ["/jwks.json"]


def test_a_key_set_url_that_fails_is_401_not_a_server_error(
    make_app, tmp_path, idp_key, session_token
):
    with tls_server(tmp_path, "127.0.0.1") as server:
        server.answer("/jwks.json", Answer(status=503, body=b"down"))
        served = make_app(
            **idp_settings(f"https://127.0.0.1:{server.port}/jwks.json"),
            outbound_ca_bundle=str(server.ca_path),
        )
        with TestClient(served, raise_server_exceptions=False) as https_client:
            agent = register(https_client)
            session = bearer(session_token())
            body = assert_problem(
                account_of(https_client, {**session, **agent.headers}), 401, "unauthorized"
            )
            assert "503" in body["detail"]
            # An untrusted certificate is a refusal too.
            untrusted = make_app(**idp_settings(f"https://127.0.0.1:{server.port}/jwks.json"))
            with TestClient(untrusted, raise_server_exceptions=False) as other:
                assert_problem(account_of(other, session), 401, "unauthorized")


# --- CLI ---------------------------------------------------------------------------------------


def link_identity(account_id: str, subject: str = "operator-9", issuer: str = ISSUER):
    return CliRunner().invoke(
        cli, ["admin", "link-identity", account_id, "--issuer", issuer, "--subject", subject]
    )


def test_the_operator_links_an_identity_from_the_cli(client, broker_env, session_token):
    a = register(client)
    b = register(client)
    session = bearer(session_token("operator-9"))
    assert_problem(account_of(client, session), 401, "unauthorized")

    result = link_identity(a.account_id)
    assert result.exit_code == 0, result.output
    assert a.account_id in result.output
    assert account_of(client, session).json()["account_id"] == a.account_id

    # Linking it again to the same account is harmless.
    assert link_identity(a.account_id).exit_code == 0

    moved = link_identity(b.account_id)
    assert moved.exit_code == 1
    assert "already linked" in moved.output and a.account_id in moved.output
    assert account_of(client, session).json()["account_id"] == a.account_id


def test_the_cli_link_refuses_bad_arguments(client, broker_env, session_token):
    agent = register(client)
    assert link_identity("not-a-uuid").exit_code == 2
    unknown = link_identity("00000000-0000-4000-8000-000000000000")
    assert unknown.exit_code == 1
    assert "no account" in unknown.output
    assert link_identity(agent.account_id, subject="  ").exit_code == 2
    assert link_identity(agent.account_id, issuer="").exit_code == 2
    # None of those linked operator-9 anywhere.
    assert_problem(account_of(client, bearer(session_token("operator-9"))), 401, "unauthorized")


# --- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        {"idp_issuer": ISSUER},
        {"idp_audience": AUDIENCE},
        {"idp_jwks_url": "https://idp.test/jwks.json"},
        {"idp_issuer": ISSUER, "idp_audience": AUDIENCE},
        {"idp_issuer": ISSUER, "idp_jwks_url": "https://idp.test/jwks.json"},
        {"idp_audience": AUDIENCE, "idp_jwks_url": "https://idp.test/jwks.json"},
    ],
)
def test_the_identity_provider_settings_come_all_together(given):
    with pytest.raises(ValidationError, match="together or not at all"):
        Settings(**given)


def test_production_refuses_a_plain_http_key_set_and_accepts_https_and_file():
    production = {
        "env": "production",
        "key_hash_secret": STRONG,
        "signing_key": RFC8032_SEED_HEX,
        "card_signing_key": RFC8032_SEED_HEX[::-1],
        "database_url": "postgresql+psycopg://db/b",
        "idp_issuer": ISSUER,
        "idp_audience": AUDIENCE,
    }
    with pytest.raises(ValidationError, match="BROKER_IDP_JWKS_URL"):
        Settings(**production, idp_jwks_url="http://idp.test/jwks.json")
    for url in ("https://idp.test/jwks.json", "file:///etc/broker/jwks.json"):
        assert Settings(**production, idp_jwks_url=url).sessions_enabled
    # Development allows plain http (a local provider); no URL at all turns sessions off.
    assert Settings(**idp_settings("http://127.0.0.1:9000/jwks.json")).sessions_enabled
    assert not Settings().sessions_enabled
    with pytest.raises(ValidationError, match="BROKER_IDP_JWKS_URL"):
        Settings(**idp_settings("ftp://idp.test/jwks.json"))
