"""A test identity provider for dashboard sessions and agent OAuth tokens: its settings,
the JWKS file the app reads (`file://`), and tokens signed as the provider would (RS256) or
as an attacker might (other keys, other algorithms). The keys are session fixtures
(tests/support/fixtures/identity.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from joserfc import jwk, jwt

from agent_broker import clock

ISSUER = "https://idp.test/"
AUDIENCE = "agent-broker-dashboard"
KID = "idp-1"

# Agent OAuth tokens, signed by the same test key (their key set is the same file).
OAUTH_ISSUER = "https://auth.agents.test/"
OAUTH_AUDIENCE = "agent-broker-api"
ATTESTATION = "/v1/account/reputation/attestation"  # a route taking an OAuth token


def jwks(*keys: jwk.RSAKey) -> bytes:
    """The provider's key set document: the public halves of `keys`."""
    return json.dumps({"keys": [key.as_dict(private=False) for key in keys]}).encode()


def write_jwks(path: Path, *keys: jwk.RSAKey) -> Path:
    path.write_bytes(jwks(*keys))
    return path


def idp_settings(jwks_url: str) -> dict[str, str]:
    return {"idp_issuer": ISSUER, "idp_audience": AUDIENCE, "idp_jwks_url": jwks_url}


def oauth_settings(jwks_url: str) -> dict[str, str]:
    return {
        "oauth_issuer": OAUTH_ISSUER,
        "oauth_audience": OAUTH_AUDIENCE,
        "oauth_jwks_url": jwks_url,
    }


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


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
