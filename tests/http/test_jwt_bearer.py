"""The bearer-JWT verifier (agent_broker/http/jwt_bearer.py) on its own: what it returns,
when it reads the issuer's key set (once, again after ten minutes, again on an unknown kid
at most every 30 s) and how a key set it cannot use is refused."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import httpx
import pytest

from agent_broker.http import jwt_bearer
from agent_broker.http.jwt_bearer import (
    MAX_JWKS_BYTES,
    InvalidToken,
    JwtVerifier,
    KeySetSource,
    VerifiedToken,
)
from agent_broker.http.outbound import OutboundRefused, OutboundResponse
from tests.support.identity import AUDIENCE, ISSUER, claims, jwks, sign, write_jwks

URL = "https://idp.test/.well-known/jwks.json"


class FakeOutbound:
    """Answers each GET with the next planned answer (bytes: 200 with that body)."""

    def __init__(self, *answers: bytes | OutboundResponse | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def get(self, url: str, **kwargs: Any) -> OutboundResponse:
        self.calls.append((url, kwargs))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, bytes):
            answer = response(200, answer)
        return answer


def response(status: int, body: bytes) -> OutboundResponse:
    return OutboundResponse(
        status_code=status, headers=httpx.Headers(), body=body, address="192.0.2.1"
    )


@pytest.fixture
def monotonic(monkeypatch) -> types.SimpleNamespace:
    """jwt_bearer's clock for the cache, set by the test."""
    fake = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(jwt_bearer, "time", types.SimpleNamespace(monotonic=lambda: fake.now))
    return fake


def verifier(outbound: FakeOutbound, url: str = URL) -> JwtVerifier:
    return JwtVerifier(issuer=ISSUER, audience=AUDIENCE, keys=KeySetSource(url, outbound))


def verify(v: JwtVerifier, token: str) -> VerifiedToken:
    return asyncio.run(v.verify(token))


def test_a_valid_token_yields_the_configured_issuer_subject_and_claims(idp_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key))
    token = sign(claims("operator-7", email="op@agents.dev"), idp_key)
    verified = verify(verifier(outbound), token)
    assert verified.issuer == ISSUER
    assert verified.subject == "operator-7"
    assert verified.claims["email"] == "op@agents.dev"
    assert outbound.calls == [(URL, {"max_bytes": MAX_JWKS_BYTES})]


def test_a_file_key_set_is_read_from_its_path(tmp_path, idp_key, monotonic):
    path = write_jwks(tmp_path / "with space.json", idp_key)
    outbound = FakeOutbound(RuntimeError("a file:// key set must not be fetched"))
    url = "file://" + str(path).replace(" ", "%20")
    assert verify(verifier(outbound, url), sign(claims(), idp_key)).subject == "operator-1"
    assert outbound.calls == []


def test_known_kids_use_the_cache_for_ten_minutes(idp_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key))
    v = verifier(outbound)
    token = sign(claims(), idp_key)
    verify(v, token)
    monotonic.now += 599
    verify(v, token)
    assert len(outbound.calls) == 1
    monotonic.now += 2
    verify(v, token)
    assert len(outbound.calls) == 2


def test_an_unknown_kid_refetches_at_most_every_30_seconds(idp_key, next_idp_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key), jwks(idp_key, next_idp_key))
    v = verifier(outbound)
    verify(v, sign(claims(), idp_key))
    rotated = sign(claims(), next_idp_key)
    monotonic.now += 20
    for _ in range(5):
        with pytest.raises(InvalidToken):
            verify(v, rotated)
    assert len(outbound.calls) == 1
    monotonic.now += 11
    assert verify(v, rotated).subject == "operator-1"
    assert len(outbound.calls) == 2
    # Both kids are known now: no fetch for either.
    verify(v, sign(claims(), idp_key))
    verify(v, rotated)
    assert len(outbound.calls) == 2


def test_a_forged_kid_right_after_a_fetch_does_not_fetch(idp_key, rogue_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key))
    v = verifier(outbound)
    verify(v, sign(claims(), idp_key))
    for n in range(10):
        with pytest.raises(InvalidToken):
            verify(v, sign(claims(), rogue_key, kid=f"forged-{n}"))
    assert len(outbound.calls) == 1


def test_a_token_without_a_kid_never_forces_a_fetch(idp_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key))
    v = verifier(outbound)
    verify(v, sign(claims(), idp_key))
    monotonic.now += 60
    # With one key in the set, a kid-less token is checked against it.
    assert verify(v, sign(claims(), idp_key, kid=None)).subject == "operator-1"
    assert len(outbound.calls) == 1


@pytest.mark.parametrize(
    "answer, says",
    [
        (response(404, b"not here"), "answered 404"),
        (response(200, b"<html>"), "not JSON"),
        (OutboundRefused("timeout", "no complete answer"), "unreachable (timeout)"),
        (OutboundRefused("redirect", "3xx"), "unreachable (redirect)"),
        (b"{}", "could not be read"),
        (b"[]", "could not be read"),
        (b'{"keys": []}', "could not be read"),
        (b'{"keys": "x"}', "could not be read"),
        (b'{"keys": [{"kty": "RSA"}]}', "could not be read"),
        (b'{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}', "could not be read"),
        (b'{"keys": [{"kty": "EC", "crv": "P-999", "x": "a", "y": "b"}]}', "could not be read"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_an_unusable_key_set_refuses_the_token(idp_key, monotonic, answer, says):
    v = verifier(FakeOutbound(answer))
    with pytest.raises(InvalidToken, match=says.replace("(", r"\(").replace(")", r"\)")):
        verify(v, sign(claims(), idp_key))


def test_the_header_is_checked_before_any_fetch(idp_key, monotonic):
    outbound = FakeOutbound(jwks(idp_key))
    v = verifier(outbound)
    for token in ("x", "a.b", "a.b.c.d", "!!!.e30.", sign(claims(), idp_key, alg="RS512")):
        with pytest.raises(InvalidToken):
            verify(v, token)
    assert outbound.calls == []


def test_forged_kids_cannot_make_every_request_fetch_while_the_issuer_fails(
    idp_key, rogue_key, monotonic
):
    outbound = FakeOutbound(jwks(idp_key), response(500, b"down"))
    v = verifier(outbound)
    verify(v, sign(claims(), idp_key))
    monotonic.now += 31
    for n in range(5):
        with pytest.raises(InvalidToken):
            verify(v, sign(claims(), rogue_key, kid=f"forged-{n}"))
    assert len(outbound.calls) <= 2
