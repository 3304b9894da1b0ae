"""A test identity provider for dashboard sessions: RSA keys made once per run, the public
JWKS written to a file the app reads (`file://`), and helpers that sign tokens as the
provider would (RS256) or as an attacker might (other keys, other algorithms)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from joserfc import jwk, jwt

from agent_broker import clock
from tests.helpers import Agent, register

ISSUER = "https://idp.test/"
AUDIENCE = "agent-broker-dashboard"
KID = "idp-1"


@pytest.fixture(scope="session")
def idp_key() -> jwk.RSAKey:
    return jwk.RSAKey.generate_key(2048, parameters={"kid": KID})


@pytest.fixture(scope="session")
def rogue_key() -> jwk.RSAKey:
    """Another RSA key claiming the provider's kid."""
    return jwk.RSAKey.generate_key(2048, parameters={"kid": KID})


@pytest.fixture(scope="session")
def next_idp_key() -> jwk.RSAKey:
    """The key the provider rotates to (a new kid)."""
    return jwk.RSAKey.generate_key(2048, parameters={"kid": "idp-2"})


def write_jwks(path: Path, *keys: jwk.RSAKey) -> Path:
    path.write_text(json.dumps({"keys": [key.as_dict(private=False) for key in keys]}))
    return path


@pytest.fixture
def jwks_path(tmp_path: Path, idp_key: jwk.RSAKey) -> Path:
    return write_jwks(tmp_path / "jwks.json", idp_key)


def idp_settings(jwks_url: str) -> dict[str, str]:
    return {"idp_issuer": ISSUER, "idp_audience": AUDIENCE, "idp_jwks_url": jwks_url}


# Agent OAuth tokens, signed by the same test key (their key set is the same file).
OAUTH_ISSUER = "https://auth.agents.test/"
OAUTH_AUDIENCE = "agent-broker-api"
ATTESTATION = "/v1/account/reputation/attestation"  # a route taking an OAuth token


def oauth_settings(jwks_url: str) -> dict[str, str]:
    return {
        "oauth_issuer": OAUTH_ISSUER,
        "oauth_audience": OAUTH_AUDIENCE,
        "oauth_jwks_url": jwks_url,
    }


@pytest.fixture
def app(make_app: Callable[..., FastAPI], jwks_path: Path) -> FastAPI:
    return make_app(**idp_settings(f"file://{jwks_path}"))


def claims(sub: str | None = "operator-1", **overrides: Any) -> dict[str, Any]:
    """The provider's usual claims, `iat`/`exp` from the service's clock; an override of
    None drops that claim."""
    now = int(clock.now().timestamp())
    values: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": sub,
        "iat": now,
        "exp": now + 300,
    }
    values.update(overrides)
    return {name: value for name, value in values.items() if value is not None}


def sign(payload: dict[str, Any], key: Any, alg: str = "RS256", **header: Any) -> str:
    """A compact JWT signed by `key` with `alg`; the header's kid is the key's unless given."""
    kid = header.pop("kid", getattr(key, "kid", None))
    values = {"alg": alg, **({"kid": kid} if kid is not None else {}), **header}
    return jwt.encode(values, payload, key, algorithms=[alg])


def unsigned(payload: dict[str, Any], **header: Any) -> str:
    """An `alg: none` token (joserfc will not make one)."""

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT', **header})}.{part(payload)}."


@pytest.fixture
def session_token(idp_key: jwk.RSAKey) -> Callable[..., str]:
    def make(sub: str | None = "operator-1", **claim_overrides: Any) -> str:
        return sign(claims(sub, **claim_overrides), idp_key)

    return make


@pytest.fixture
def oauth_token(idp_key: jwk.RSAKey) -> Callable[..., str]:
    """An agent OAuth access token (scope `read`, a fresh jti) for `sub`."""

    def make(sub: str = "agent-1", scope: str = "read") -> str:
        values = {"iss": OAUTH_ISSUER, "aud": OAUTH_AUDIENCE, "jti": str(uuid.uuid4())}
        return sign(claims(sub, scope=scope, **values), idp_key)

    return make


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def linked(client: TestClient, session_token: Callable[..., str]) -> tuple[Agent, dict[str, str]]:
    """An account and the headers of a session (operator-1) linked to it."""
    agent = register(client)
    session = bearer(session_token())
    response = client.get("/v1/account", headers={**session, **agent.headers})
    assert response.status_code == 200, response.text
    return agent, session
