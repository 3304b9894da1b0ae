"""Discovery from the base URL alone: the A2A 1.0 agent card, signed with an Ed25519 key
whose public half is the one key of /.well-known/jwks.json (its signature checked with
PyJWT, a JOSE library independent of the one that signs), the guides for agents,
robots.txt, security.txt, and the A2A 0.3 surfaces answered 501."""

from __future__ import annotations

import base64
import hashlib
import json
import warnings
from datetime import datetime, timedelta

import jwt
import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import (
    InvalidSignaturesError,
    _canonicalize_agent_card,
    create_signature_verifier,
)
from fastapi.testclient import TestClient
from joserfc import jws
from joserfc.jwk import OKPKey
from pydantic import ValidationError

from agent_broker import clock
from tests.support.http import assert_problem
from tests.support.settings import PUBLIC_BASE_URL as BASE


def _verify(card: dict, jwks: dict) -> dict:
    """The signature's protected header, once verified two ways: by the a2a-sdk's own
    verifier (as an A2A client does) and by joserfc, a JOSE library independent of the
    PyJWT the signer uses, over A2A's canonical form of the card."""
    (signature,) = card["signatures"]
    header = json.loads(base64.urlsafe_b64decode(signature["protected"] + "=="))
    (jwk,) = [key for key in jwks["keys"] if key["kid"] == header["kid"]]
    parsed = parse_agent_card(card)
    create_signature_verifier(lambda kid, jku: jwt.PyJWK(jwk), ["EdDSA"])(parsed)
    payload = _canonicalize_agent_card(parsed).encode()
    encoded = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
    token = f"{signature['protected']}.{encoded}.{signature['signature']}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # joserfc prefers the name "Ed25519" to "EdDSA"
        verified = jws.deserialize_compact(token, OKPKey.import_key(jwk), algorithms=["EdDSA"])
    assert verified.payload == payload
    return header


def test_the_card_is_signed_by_the_published_key(client):
    card = client.get("/.well-known/agent-card.json").json()
    jwks = client.get("/.well-known/jwks.json").json()
    header = _verify(card, jwks)
    assert header == {
        "alg": "EdDSA",
        "jku": f"{BASE}/.well-known/jwks.json",
        "kid": header["kid"],
        "typ": "JOSE",
    }
    (key,) = jwks["keys"]
    assert (key["kty"], key["crv"]) == ("OKP", "Ed25519") and "d" not in key
    raw = base64.urlsafe_b64decode(key["x"] + "=")
    assert key["kid"] == hashlib.sha256(raw).hexdigest()[:16]


def test_a_tampered_card_fails_verification(client):
    card = client.get("/.well-known/agent-card.json").json()
    jwks = client.get("/.well-known/jwks.json").json()
    card["supportedInterfaces"][0]["url"] = "https://evil.example/a2a"
    with pytest.raises(InvalidSignaturesError):
        _verify(card, jwks)


def test_the_card_has_the_a2a_1_0_fields(client):
    card = client.get("/.well-known/agent-card.json").json()
    assert card["supportedInterfaces"] == [
        {"url": f"{BASE}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["capabilities"]["streaming"] is False
    assert card["capabilities"]["pushNotifications"] is False
    assert card["capabilities"]["extendedAgentCard"] is False
    (extension,) = card["capabilities"]["extensions"]
    assert extension["uri"] == f"{BASE}/a2a/extensions/machine-contract/v1"
    assert extension["required"] is False
    params = extension["params"]
    for name, path in {
        "openapi": "/openapi.json",
        "llmsFull": "/llms-full.txt",
        "llms": "/llms.txt",
        "robots": "/robots.txt",
        "status": "/status.json",
        "agentCardKeys": "/.well-known/jwks.json",
        "dealCredentialKeys": "/.well-known/paseto-keys.json",
    }.items():
        assert params[name] == BASE + path
    assert params["pricing"]["dealFeeCredits"] == 2000
    assert "x402Manifest" not in params and "securityTxt" not in params
    assert card["defaultInputModes"] == ["application/json"]
    assert "application/problem+json" in card["defaultOutputModes"]
    assert card["securitySchemes"] == {
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "x-api-key"}}
    }
    assert card["securityRequirements"] == []
    assert [skill["id"] for skill in card["skills"]] == ["onboarding"]
    assert card["provider"] == {"organization": "agent-broker", "url": BASE}
    for name in ("name", "description", "version", "documentationUrl", "iconUrl"):
        assert card[name]
    icon = client.get("/icon.svg")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"


def test_the_card_links_the_manifest_and_security_txt_when_they_exist(make_app):
    settings = {
        "x402_enabled": True,
        "x402_facilitator_url": "http://127.0.0.1:9",
        "x402_pay_to": "0x" + "5a" * 20,
        "security_contact": "mailto:security@broker.test",
    }
    with TestClient(make_app(**settings)) as client:
        params = client.get("/.well-known/agent-card.json").json()["capabilities"]
        params = params["extensions"][0]["params"]
        assert params["x402Manifest"] == f"{BASE}/.well-known/x402"
        assert params["securityTxt"] == f"{BASE}/.well-known/security.txt"
        assert "/.well-known/x402" in client.get("/llms.txt").text


def test_the_development_card_key_is_made_once_and_kept(make_app, client):
    first = client.get("/.well-known/jwks.json").json()
    with TestClient(make_app()) as again:
        assert again.get("/.well-known/jwks.json").json() == first
    token_keys = client.get("/.well-known/paseto-keys.json").json()["keys"]
    assert first["keys"][0]["kid"] not in {key["kid"] for key in token_keys}


def test_a_configured_card_key_is_used(make_app):
    seed = bytes(range(32))
    with TestClient(make_app(card_signing_key=seed.hex())) as client:
        (key,) = client.get("/.well-known/jwks.json").json()["keys"]
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()
    assert base64.urlsafe_b64decode(key["x"] + "=") == public


def test_a_bad_card_key_stops_the_app(make_app):
    with pytest.raises(ValidationError, match="card_signing_key"):
        make_app(card_signing_key="not-a-key")


def test_the_guides_for_agents(client):
    guide = client.get("/llms.txt")
    assert guide.status_code == 200 and guide.headers["content-type"].startswith("text/markdown")
    for needle in ("/v1/account/register", "x-api-key", "Idempotency-Key", "/openapi.json"):
        assert needle in guide.text
    full = client.get("/llms-full.txt").text
    assert full.startswith(guide.text)
    assert "- POST /v1/listings:" in full and "- GET /v1/feed:" in full


def test_robots_keeps_crawlers_off_the_api(client):
    robots = client.get("/robots.txt")
    assert robots.status_code == 200
    assert "Disallow: /v1/" in robots.text and "Allow: /" in robots.text


def test_security_txt_needs_a_contact(client, make_app):
    assert client.get("/.well-known/security.txt").status_code == 404
    with TestClient(make_app(security_contact="mailto:security@broker.test")) as configured:
        text = configured.get("/.well-known/security.txt").text
    fields = dict(line.split(": ", 1) for line in text.strip().splitlines())
    assert fields["Contact"] == "mailto:security@broker.test"
    assert fields["Canonical"] == f"{BASE}/.well-known/security.txt"
    expires = datetime.fromisoformat(fields["Expires"].replace("Z", "+00:00"))
    assert clock.now() < expires < clock.now() + timedelta(days=365)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/.well-known/agent.json"),
        ("POST", "/v1/message:send"),
        ("POST", "/v1/message:stream"),
        ("GET", "/v1/tasks/abc"),
        ("GET", "/v1/card"),
    ],
)
def test_a2a_0_3_surfaces_answer_501(client, method, path):
    body = assert_problem(client.request(method, path), 501, "a2a_version_not_supported")
    assert "1.0" in body["detail"]
