"""Minting and verifying PASETO v4.public tokens.

Claims are a compact JSON object; `iat` and `exp` are RFC 3339 strings (UTC, `Z`), as
PASETO's registered claims are. The footer is JSON `{"kid": "..."}` naming the key in
/.well-known/paseto-keys.json that verifies the token. Time always comes from the caller
(`agent_broker.clock.now()`), never from the library, so time rules can be tested."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from urllib.parse import urlsplit

import pyseto

from agent_broker import json_input
from agent_broker.clock import rfc3339
from agent_broker.tokens.keys import Signer

# The proof audience rule lives in tokens.origins; callers reach it through this module too.
from agent_broker.tokens.origins import InvalidOrigin, canonical_origin  # noqa: F401

DEAL_CREDENTIAL_TYP = "svc.deal.v1"
DEAL_CREDENTIAL_TTL = timedelta(days=7)
REPUTATION_STATEMENT_TYP = "svc.reputation.v1"
REPUTATION_STATEMENT_TTL = timedelta(hours=24)
REPUTATION_PROOF_TYP = "svc.reputation-proof.v1"
REPUTATION_PROOF_TTL = timedelta(minutes=5)
# docs/interface.md §13.2: a proof nonce is exactly 32 lowercase hex characters.
_PROOF_NONCE = re.compile(r"[0-9a-f]{32}")
# Only base64url characters: Python's decoder would otherwise skip stray ones.
_SHAPE = re.compile(r"v4\.public\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_RESERVED = frozenset({"iat", "exp"})
_DEFAULT_PORTS = {"https": 443, "http": 80}


class TokenError(Exception):
    """A token that must not be trusted. Verifiers fail closed on any subclass."""


class MalformedToken(TokenError):
    pass


class UnknownKey(TokenError):
    pass


class BadSignature(TokenError):
    pass


class WrongType(TokenError):
    pass


class WrongAudience(TokenError):
    pass


class TokenExpired(TokenError):
    pass


@dataclass(frozen=True)
class MintedToken:
    token: str
    kid: str
    expires_at: datetime


def mint(signer: Signer, claims: Mapping[str, Any], ttl: timedelta, now: datetime) -> MintedToken:
    """Sign `claims` (which must carry `typ`) with `iat` = now and `exp` = now + ttl."""
    if not isinstance(claims.get("typ"), str) or not claims["typ"]:
        raise ValueError("claims need a typ; verifiers refuse tokens without one")
    if _RESERVED & claims.keys():
        raise ValueError("iat and exp are set by mint()")
    if ttl <= timedelta(0):
        raise ValueError("ttl must be positive")
    issued_at = _whole_seconds(now)
    expires_at = issued_at + ttl
    body = {**claims, "iat": rfc3339(issued_at), "exp": rfc3339(expires_at)}
    token = pyseto.encode(signer.paseto_key, _compact(body), footer=_compact({"kid": signer.kid}))
    return MintedToken(token=token.decode("ascii"), kid=signer.kid, expires_at=expires_at)


def mint_deal_credential(
    signer: Signer,
    *,
    deal_id: str,
    bearer: Literal["poster", "negotiator"],
    audience_origin: str,
    now: datetime,
) -> MintedToken:
    """The deal-scoped credential one side presents at the counterparty's deal route.
    `bearer` is the holder's side; `audience_origin` is the origin of the counterparty's
    deal route (use origin_of())."""
    if not deal_id:
        raise ValueError("deal_id must not be empty")
    if bearer not in ("poster", "negotiator"):
        raise ValueError("bearer must be 'poster' or 'negotiator'")
    if audience_origin != origin_of(audience_origin):
        raise ValueError("audience_origin must be an origin; pass the route through origin_of()")
    claims = {
        "typ": DEAL_CREDENTIAL_TYP,
        "deal_id": deal_id,
        "bearer": bearer,
        "aud": audience_origin,
    }
    return mint(signer, claims, DEAL_CREDENTIAL_TTL, now)


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an http(s) URL: lower-cased, default port dropped, no path."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL with a usable host: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError("an origin needs an http or https URL with a host")
    host = parts.hostname  # already lower-cased, brackets removed
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def verify(
    token: str,
    key_document_keys: Iterable[Mapping[str, Any]],
    expected_typ: str,
    now: datetime,
    *,
    audience: str | None = None,
) -> dict[str, Any]:
    """Check the signature with the key the footer's kid names (entries shaped like the key
    document's `keys`), then `typ`, `exp` (and `nbf`, and `aud` when given). Returns the
    claims; raises a TokenError subclass on anything doubtful."""
    claims = verify_signature(token, key_document_keys)
    check_type(claims, expected_typ)
    check_time(claims, now)
    if audience is not None and claims.get("aud") != audience:
        raise WrongAudience("the token was issued for another audience")
    return claims


def verify_signature(token: str, key_document_keys: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The claims of `token` once its signature holds under the published key its footer's
    kid names. Nothing else is checked: callers go on with check_type() and check_time()
    (verify() does all three)."""
    kid = _footer_kid(token)
    public_hex = next(
        (str(k.get("public_key_hex")) for k in key_document_keys if k.get("kid") == kid), None
    )
    if public_hex is None:
        raise UnknownKey(f"no published key has kid {kid!r}")
    try:
        key = pyseto.Key.from_asymmetric_key_params(4, x=bytes.fromhex(public_hex))
    except ValueError:
        raise UnknownKey(f"the published key {kid!r} is not an Ed25519 public key") from None
    try:
        payload = pyseto.decode(key, token).payload
    except pyseto.VerifyError:
        raise BadSignature("the token's signature does not verify") from None
    except (ValueError, pyseto.PysetoError):
        raise MalformedToken("not a PASETO v4.public token") from None
    try:
        claims = json_input.loads(payload)
    except ValueError:
        raise MalformedToken("the token's claims are not JSON") from None
    if not isinstance(claims, dict):
        raise MalformedToken("the token's claims are not a JSON object")
    return claims


def check_type(claims: Mapping[str, Any], expected_typ: str) -> None:
    """The type claim must be exactly `expected_typ`; a token without one is refused."""
    if claims.get("typ") != expected_typ:
        raise WrongType(f"expected typ {expected_typ!r}, got {claims.get('typ')!r}")


def check_time(claims: Mapping[str, Any], now: datetime) -> None:
    """`now` must be before `exp` (which must be present) and not before `nbf` (if any)."""
    if not _whole_seconds(now) < _claim_time(claims, "exp"):
        raise TokenExpired("the token has expired")
    if "nbf" in claims and _whole_seconds(now) < _claim_time(claims, "nbf"):
        raise TokenExpired("the token is not valid yet")


def is_proof_nonce(value: object) -> bool:
    """Whether `value` has the shape of a reputation-proof nonce: 32 lowercase hex."""
    return isinstance(value, str) and _PROOF_NONCE.fullmatch(value) is not None


def _footer_kid(token: str) -> str:
    if not isinstance(token, str) or not _SHAPE.fullmatch(token):
        raise MalformedToken("not a PASETO v4.public token with a footer naming its key")
    parts = token.split(".")
    try:
        footer = json_input.loads(_b64url_decode(parts[3]))
    except (ValueError, binascii.Error):
        raise MalformedToken("the token's footer is not JSON") from None
    kid = footer.get("kid") if isinstance(footer, dict) else None
    if not isinstance(kid, str) or not kid:
        raise MalformedToken("the token's footer names no kid")
    return kid


def _claim_time(claims: Mapping[str, Any], name: str) -> datetime:
    value = claims.get(name)
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise MalformedToken(f"the token's {name} is not an RFC 3339 time")
    return moment


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _compact(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _whole_seconds(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("naive datetimes are not accepted; use agent_broker.clock.now()")
    return moment.astimezone(UTC).replace(microsecond=0)
