"""Minting deal credentials and verifying tokens, checked by an independent verifier."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta

import pyseto
import pytest
from cryptography.exceptions import InvalidSignature

from agent_broker import clock
from agent_broker.tokens import keys, service
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.service import (
    BadSignature,
    MalformedToken,
    TokenExpired,
    UnknownKey,
    WrongAudience,
    WrongType,
    mint,
    mint_deal_credential,
    origin_of,
    verify,
)
from tests.support import paseto

RFC3339_Z = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
DEAL = "5f0c8a52-6a9e-4d43-9d4c-0d1e2f3a4b5c"
AUDIENCE = "https://route.example.org"


def _key_document(client) -> list[dict]:  # type: ignore[no-untyped-def]
    response = client.get("/.well-known/paseto-keys.json")
    assert response.status_code == 200
    return response.json()["keys"]


def _credential(signer: keys.Signer, **overrides: object) -> service.MintedToken:
    values: dict = {
        "deal_id": DEAL,
        "bearer": "negotiator",
        "audience_origin": AUDIENCE,
        "now": clock.now(),
    }
    values.update(overrides)
    return mint_deal_credential(signer, **values)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_deal_credential_verifies_independently_with_the_published_key(app, client):
    now = clock.now()
    minted = _credential(app.state.context.part(Signer), now=now)

    assert minted.token.startswith("v4.public.")
    footer = paseto.footer_of(minted.token)
    assert footer == {"kid": minted.kid}
    assert minted.kid == app.state.context.part(Signer).kid
    [published] = [k for k in _key_document(client) if k["kid"] == footer["kid"]]
    claims = paseto.verify(minted.token, published["public_key_hex"])

    assert set(claims) == {"typ", "deal_id", "bearer", "aud", "iat", "exp"}
    assert claims["typ"] == "svc.deal.v1"
    assert (claims["deal_id"], claims["bearer"], claims["aud"]) == (DEAL, "negotiator", AUDIENCE)
    assert RFC3339_Z.fullmatch(claims["iat"]) and RFC3339_Z.fullmatch(claims["exp"])
    issued = datetime.fromisoformat(claims["iat"])
    expires = datetime.fromisoformat(claims["exp"])
    assert issued == now.replace(microsecond=0)
    assert expires - issued == timedelta(days=7)
    assert minted.expires_at == expires


def test_a_tampered_token_fails_both_verifiers(app, client):
    published = _key_document(client)
    minted = _credential(app.state.context.part(Signer), bearer="poster")
    message, signature, footer = paseto.split(minted.token)
    forged_message = message.replace(b'"bearer":"poster"', b'"bearer":"negotiator"')
    assert forged_message != message
    forged = f"v4.public.{_b64url(forged_message + signature)}.{_b64url(footer)}"

    with pytest.raises(InvalidSignature):
        paseto.verify(forged, published[0]["public_key_hex"])
    with pytest.raises(BadSignature):
        verify(forged, published, "svc.deal.v1", clock.now())


def test_the_footer_is_signed_too(app, client):
    published = _key_document(client)
    minted = _credential(app.state.context.part(Signer))
    body, _ = minted.token.removeprefix("v4.public.").split(".")
    respaced = _b64url(json.dumps({"kid": minted.kid}).encode())  # same kid, other bytes
    with pytest.raises(BadSignature):
        verify(f"v4.public.{body}.{respaced}", published, "svc.deal.v1", clock.now())


def test_the_service_verifies_its_own_credential(app, client):
    minted = _credential(app.state.context.part(Signer))
    claims = verify(minted.token, _key_document(client), "svc.deal.v1", clock.now())
    assert claims["deal_id"] == DEAL
    assert verify(
        minted.token, _key_document(client), "svc.deal.v1", clock.now(), audience=AUDIENCE
    )
    with pytest.raises(WrongAudience):
        verify(minted.token, _key_document(client), "svc.deal.v1", clock.now(), audience="x")


def test_verify_refuses_the_wrong_type(app, client):
    minted = _credential(app.state.context.part(Signer))
    with pytest.raises(WrongType, match="svc.reputation.v1"):
        verify(minted.token, _key_document(client), "svc.reputation.v1", clock.now())


def test_verify_refuses_an_expired_token(app, client):
    published = _key_document(client)
    minted = _credential(app.state.context.part(Signer))
    assert verify(minted.token, published, "svc.deal.v1", minted.expires_at - timedelta(seconds=1))
    with pytest.raises(TokenExpired):
        verify(minted.token, published, "svc.deal.v1", minted.expires_at)
    clock.advance(timedelta(days=7, seconds=1))
    with pytest.raises(TokenExpired):
        verify(minted.token, published, "svc.deal.v1", clock.now())


def test_verify_refuses_an_unknown_kid(app, client):
    minted = _credential(app.state.context.part(Signer))
    with pytest.raises(UnknownKey, match=minted.kid):
        verify(minted.token, [], "svc.deal.v1", clock.now())
    stranger = keys.generate()
    other = [{"kid": stranger.kid, "public_key_hex": stranger.public_key_hex}]
    with pytest.raises(UnknownKey):
        verify(minted.token, other, "svc.deal.v1", clock.now())


def test_verify_refuses_a_token_signed_by_another_key_under_a_published_kid(app, client):
    published = _key_document(client)
    claims = {"typ": "svc.deal.v1", "exp": "2999-01-01T00:00:00Z"}
    impostor = pyseto.encode(
        keys.generate().paseto_key,
        json.dumps(claims).encode(),
        footer=json.dumps({"kid": app.state.context.part(Signer).kid}).encode(),
    ).decode()
    with pytest.raises(BadSignature):
        verify(impostor, published, "svc.deal.v1", clock.now())


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "v4.local.abc.def", "v4.public.abc", "v4.public.a+b.c", "v2.public.abc.def"],
)
def test_verify_refuses_what_is_not_a_v4_public_token_with_a_footer(token):
    signer = keys.generate()
    published = [{"kid": signer.kid, "public_key_hex": signer.public_key_hex}]
    with pytest.raises(MalformedToken):
        verify(token, published, "svc.deal.v1", clock.now())


def test_verify_refuses_a_token_without_exp():
    signer = keys.generate()
    published = [{"kid": signer.kid, "public_key_hex": signer.public_key_hex}]
    token = pyseto.encode(
        signer.paseto_key, b'{"typ":"svc.deal.v1"}', footer=json.dumps({"kid": signer.kid})
    ).decode()
    with pytest.raises(MalformedToken, match="exp"):
        verify(token, published, "svc.deal.v1", clock.now())


def test_generic_mint_serves_reputation_statements():
    signer = keys.generate()
    published = [{"kid": signer.kid, "public_key_hex": signer.public_key_hex}]
    now = datetime(2026, 3, 1, 12, 0, 30, 123456, tzinfo=UTC)
    statement = {"typ": service.REPUTATION_STATEMENT_TYP, "handle": "0123456789ab"}
    minted = mint(signer, statement, service.REPUTATION_STATEMENT_TTL, now)

    claims = paseto.verify(minted.token, signer.public_key_hex)
    assert claims == {
        "typ": "svc.reputation.v1",
        "handle": "0123456789ab",
        "iat": "2026-03-01T12:00:30Z",
        "exp": "2026-03-02T12:00:30Z",
    }
    assert minted.expires_at == datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)
    assert verify(minted.token, published, "svc.reputation.v1", now) == claims
    with pytest.raises(WrongType):
        verify(minted.token, published, "svc.deal.v1", now)


def test_the_same_deal_minted_at_the_same_moment_gives_the_same_token():
    # Ed25519 is deterministic: a deal package can re-mint its credential from the seal
    # time on every read and hand out one stable token.
    signer = keys.generate()
    sealed_at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    first = _credential(signer, now=sealed_at)
    assert _credential(signer, now=sealed_at + timedelta(microseconds=5)) == first


@pytest.mark.parametrize(
    "claims, ttl",
    [
        ({"deal_id": "x"}, timedelta(days=1)),
        ({"typ": ""}, timedelta(days=1)),
        ({"typ": "svc.deal.v1", "exp": "2999-01-01T00:00:00Z"}, timedelta(days=1)),
        ({"typ": "svc.deal.v1", "iat": "2020-01-01T00:00:00Z"}, timedelta(days=1)),
        ({"typ": "svc.deal.v1"}, timedelta(0)),
    ],
)
def test_mint_refuses_claims_it_cannot_sign_safely(claims, ttl):
    with pytest.raises(ValueError):
        mint(keys.generate(), claims, ttl, clock.now())


@pytest.mark.parametrize(
    "overrides",
    [
        {"bearer": "buyer"},
        {"deal_id": ""},
        {"audience_origin": "https://route.example.org/d/8f2a1c"},
        {"audience_origin": "https://Route.Example.org"},
        {"now": datetime(2026, 3, 1)},  # naive
    ],
)
def test_mint_deal_credential_refuses_bad_arguments(overrides):
    with pytest.raises(ValueError):
        _credential(keys.generate(), **overrides)


@pytest.mark.parametrize(
    "url, origin",
    [
        ("https://route.example.org/d/8f2a1c", "https://route.example.org"),
        ("HTTPS://Route.Example.ORG:443/D/8F2A1C?x=1#y", "https://route.example.org"),
        ("https://route.example.org:8443/d/", "https://route.example.org:8443"),
        ("http://agents.dev:80/deals/", "http://agents.dev"),
        ("http://agents.dev:443/deals/", "http://agents.dev:443"),
        ("https://user:pw@agents.dev/deals/", "https://agents.dev"),
        ("https://[2001:DB8::1]:443/d/", "https://[2001:db8::1]"),
    ],
)
def test_origin_of(url, origin):
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url", ["", "route.example.org/d/", "ftp://route.example.org/", "https:///d/", "https://h:x/"]
)
def test_origin_of_refuses_what_has_no_http_origin(url):
    with pytest.raises(ValueError):
        origin_of(url)
