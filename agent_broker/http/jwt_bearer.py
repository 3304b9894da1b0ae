"""Bearer JWTs from a configured issuer: identity-provider sessions for the dashboard (and,
with its own settings, agent OAuth tokens). RS256 only; issuer, audience, expiry and
not-before checked against the service's clock with a minute's leeway; keys from the
issuer's JWKS (a `file://` path, or http(s) fetched through the outbound client),
cached, and fetched again when a token names a key id the cached set lacks (at most
once per REFETCH_SECONDS, so forged kids cannot make every request fetch). Signatures
are checked by joserfc; nothing here parses more of a token than its header."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from agent_broker import clock, json_input
from agent_broker.http.outbound import OutboundClient, OutboundRefused

ALGORITHMS = ("RS256",)
MAX_AGE_SECONDS = 600.0
REFETCH_SECONDS = 30.0
LEEWAY_SECONDS = 60
MAX_JWKS_BYTES = 256 * 1024


class InvalidToken(Exception):
    """The token is not acceptable; the message says why (never echoes the token)."""


@dataclass(frozen=True)
class VerifiedToken:
    issuer: str
    subject: str
    claims: dict[str, Any]


class KeySetSource:
    """The issuer's key set, cached."""

    def __init__(self, url: str, outbound: OutboundClient) -> None:
        self.url = url
        self._outbound = outbound
        self._keys: KeySet | None = None
        self._kids: frozenset[str] = frozenset()
        self._fetched_at = float("-inf")
        self._attempted_at = float("-inf")

    async def for_kid(self, kid: str | None) -> KeySet:
        now = time.monotonic()
        stale = self._keys is None or now - self._fetched_at > MAX_AGE_SECONDS
        unknown = kid is not None and kid not in self._kids
        # Every attempt, failed ones too, waits REFETCH_SECONDS before the next, so neither
        # forged kids nor a failing issuer turn requests into fetches.
        if (stale or unknown) and now - self._attempted_at > REFETCH_SECONDS:
            self._attempted_at = now
            await self._refresh()
        if self._keys is None:
            raise InvalidToken("the issuer's key set is not available")
        return self._keys

    async def _refresh(self) -> None:
        document = await self._load()
        try:
            keys = KeySet.import_key_set(document)
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise InvalidToken(f"the issuer's key set could not be read ({exc})") from None
        self._keys = keys
        self._kids = frozenset(key.kid for key in keys.keys if key.kid)
        self._fetched_at = time.monotonic()

    async def _load(self) -> Any:
        parts = urlsplit(self.url)
        if parts.scheme == "file":
            try:
                raw = Path(unquote(parts.path)).read_bytes()
            except OSError as exc:
                raise InvalidToken(
                    f"the issuer's key set file is unreadable ({exc.strerror})"
                ) from None
        else:
            try:
                response = await self._outbound.get(self.url, max_bytes=MAX_JWKS_BYTES)
            except OutboundRefused as exc:
                raise InvalidToken(f"the issuer's key set is unreachable ({exc.kind})") from None
            if response.status_code != 200:
                raise InvalidToken(f"the issuer's key set answered {response.status_code}")
            raw = response.body
        try:
            return json_input.loads(raw)
        except ValueError:
            raise InvalidToken("the issuer's key set is not JSON") from None


class JwtVerifier:
    def __init__(
        self, *, issuer: str, audience: str, keys: KeySetSource, require_jti: bool = False
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self._keys = keys
        self._required = {"jti": {"essential": True}} if require_jti else {}

    async def verify(self, token: str) -> VerifiedToken:
        header = _header(token)
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken("only RS256 tokens are accepted")
        kid = header.get("kid")
        keys = await self._keys.for_kid(kid if isinstance(kid, str) else None)
        try:
            decoded = jwt.decode(token, keys, algorithms=list(ALGORITHMS))
        except JoseError as exc:
            raise InvalidToken(f"the signature does not verify ({exc.error})") from None
        except ValueError:
            raise InvalidToken("the token is malformed") from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(clock.now().timestamp()),
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.audience},
            sub={"essential": True},
            exp={"essential": True},
            **self._required,
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise InvalidToken(f"{exc.error}: {exc.description}") from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise InvalidToken("the token names no subject")
        return VerifiedToken(issuer=self.issuer, subject=subject, claims=claims)


def _header(token: str) -> dict[str, Any]:
    if token.count(".") != 2 or len(token) > 16_384:
        raise InvalidToken("the token is not a compact JWS")
    encoded = token.split(".", 1)[0]
    try:
        header = json_input.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise InvalidToken("the token's header is unreadable") from None
    if not isinstance(header, dict):
        raise InvalidToken("the token's header is unreadable")
    return header
