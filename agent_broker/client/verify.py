"""Verifying a reputation proof as a relying party, by the procedure of docs/interface.md §13.3.

A relying party that wants to see an agent's reputation issues a fresh nonce, the agent
mints a proof for it (POST /v1/account/reputation/attestation with `nonce` and the relying
party's origin as `audience`) and presents the token. ProofVerifier then checks, in this
order and failing closed on the first doubt (every refusal is a TokenError subclass):

1. the v4.public signature, with the key the footer's kid names in the service's OWN key
   document, fetched from the service base URL in the verifier's configuration; never a
   key or a key location supplied by the presenter;
2. the type claim is exactly `svc.reputation-proof.v1` (a statement or a deal credential
   signed by the same key is refused);
3. the nonce is the one this verifier issued for this exchange, still outstanding; it is
   burnt by the first authentic proof presented against it, whatever that proof carries;
4. `aud` equals the verifier's own canonical origin, from its own configuration;
5. the token has not expired (by the verifier's clock).

Only then is the record inside the proof returned; rely on nothing else.

The service keeps no nonce record, so single use is the relying party's job: MemoryNonceBook
keeps nonces in this process only. A relying party running several workers, or one that
must survive a restart within a proof's life, implements NonceBook over shared storage,
e.g. a table with a unique nonce column burnt with one atomic `DELETE ... RETURNING`.

It runs in the relying party's process, so it lives with the client; the token format it
shares with the service (signature, type and time checks, the origin rule) stays in
agent_broker.tokens, which the service uses to sign."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from agent_broker import clock, json_input
from agent_broker.tokens import service as tokens
from agent_broker.tokens.service import (
    BadSignature,
    MalformedToken,
    TokenError,
    TokenExpired,
    UnknownKey,
    WrongAudience,
    WrongType,
)

KEY_DOCUMENT_PATH = "/.well-known/paseto-keys.json"
# Claims that frame the record rather than belong to it.
_ENVELOPE = frozenset({"typ", "nonce", "aud", "iat", "exp", "nbf"})
_MAX_KEY_DOCUMENT_BYTES = 256 * 1024


class KeyDocumentUnavailable(TokenError):
    """The service's key document could not be fetched or read: nothing can be verified."""


class WrongNonce(TokenError):
    """The proof carries another nonce than the one issued for this exchange."""


class NonceReused(TokenError):
    """The nonce was never issued by this verifier, has lapsed, or was already used."""


_STEPS: tuple[tuple[int, str, tuple[type[TokenError], ...]], ...] = (
    (1, "signature", (KeyDocumentUnavailable, MalformedToken, UnknownKey, BadSignature)),
    (2, "type", (WrongType,)),
    (3, "nonce", (WrongNonce, NonceReused)),
    (4, "audience", (WrongAudience,)),
    (5, "expiry", (TokenExpired,)),
)


def failed_step(exc: TokenError) -> tuple[int, str]:
    """(step number, name) of the verifier procedure a refusal belongs to."""
    for number, name, kinds in _STEPS:
        if isinstance(exc, kinds):
            return number, name
    return 1, "signature"


class NonceBook(Protocol):
    """The relying party's record of the nonces it issued."""

    def burn(self, nonce: str) -> bool:
        """True exactly once for a nonce this verifier issued and that is still outstanding
        (and from then on False); False for any other nonce. Must be atomic."""
        ...


class MemoryNonceBook:
    """Single-use nonces in this process's memory (see the module docstring for why a real
    relying party persists them). A nonce lapses `max_age` after it was issued: long enough
    for the agent to mint a proof (life 5 minutes) and present it."""

    def __init__(
        self,
        *,
        max_age: timedelta = timedelta(minutes=10),
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self._max_age = max_age
        self._now = now
        self._lock = threading.Lock()
        self._outstanding: dict[str, datetime] = {}
        self._burnt: dict[str, datetime] = {}

    def issue(self) -> str:
        """A fresh nonce (128 random bits as 32 lowercase hex characters) to send the agent."""
        nonce = secrets.token_hex(16)
        self.remember(nonce)
        return nonce

    def remember(self, nonce: str) -> None:
        """Record a nonce issued by other means (it must be fresh and unpredictable)."""
        if not tokens.is_proof_nonce(nonce):
            raise ValueError("a proof nonce is exactly 32 lowercase hex characters")
        with self._lock:
            now = self._prune()
            if nonce in self._burnt or nonce in self._outstanding:
                raise ValueError("this nonce was already issued; nonces are single-use")
            self._outstanding[nonce] = now

    def burn(self, nonce: str) -> bool:
        with self._lock:
            now = self._prune()
            if self._outstanding.pop(nonce, None) is None:
                return False
            self._burnt[nonce] = now
            return True

    def _prune(self) -> datetime:
        now = self._now()
        for book in (self._outstanding, self._burnt):
            for nonce in [n for n, at in book.items() if now - at > self._max_age]:
                del book[nonce]
        return now


def key_document_url(service_base_url: str) -> str:
    """Where the service publishes its keys. The base URL must be https, or plain http on a
    loopback host only (a key document anyone on the path could rewrite would verify
    anything)."""
    try:
        parts = urlsplit(service_base_url)
        host = parts.hostname
    except ValueError:
        host = None
    if host is None or parts.scheme not in ("https", "http"):
        raise ValueError("the service base URL must be an https URL with a host")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError("the service base URL carries no credentials, query or fragment")
    if parts.scheme == "http" and not _is_loopback(host):
        raise ValueError("the service base URL must use https (plain http only on loopback)")
    return service_base_url.rstrip("/") + KEY_DOCUMENT_PATH


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServiceKeys:
    """The service's key document, fetched from the configured location and cached. A kid
    missing from the cached copy triggers one refetch (a key rotated in since), at most
    once per `refetch_interval`, so a presenter cannot make every check fetch."""

    def __init__(
        self,
        service_base_url: str,
        *,
        http: httpx.Client | None = None,
        max_age: timedelta = timedelta(minutes=5),
        refetch_interval: timedelta = timedelta(seconds=30),
        timeout_seconds: float = 5.0,
    ) -> None:
        self.url = key_document_url(service_base_url)
        self._http = http
        self._max_age = max_age.total_seconds()
        self._refetch_interval = refetch_interval.total_seconds()
        self._timeout = timeout_seconds
        self._lock = threading.Lock()
        self._keys: list[dict[str, Any]] | None = None
        self._fetched_at = 0.0

    def claims_of(self, token: str) -> dict[str, Any]:
        """Step 1: the claims of `token` once its signature holds under a published key."""
        keys, fresh = self._current()
        try:
            return tokens.verify_signature(token, keys)
        except UnknownKey:
            if fresh or time.monotonic() - self._fetched_at < self._refetch_interval:
                raise
        return tokens.verify_signature(token, self._refresh())

    def _current(self) -> tuple[list[dict[str, Any]], bool]:
        with self._lock:
            if self._keys is not None and time.monotonic() - self._fetched_at < self._max_age:
                return self._keys, False
        return self._refresh(), True

    def _refresh(self) -> list[dict[str, Any]]:
        keys = self._fetch()
        with self._lock:
            self._keys, self._fetched_at = keys, time.monotonic()
        return keys

    def _fetch(self) -> list[dict[str, Any]]:
        if self._http is not None:
            return self._read(self._http)
        with httpx.Client(timeout=self._timeout) as http:
            return self._read(http)

    def _read(self, http: httpx.Client) -> list[dict[str, Any]]:
        body = bytearray()
        try:
            # Redirects are not followed: the keys come from the configured location only.
            with http.stream(
                "GET", self.url, headers={"Accept": "application/json"}, follow_redirects=False
            ) as response:
                if response.status_code != 200:
                    raise KeyDocumentUnavailable(
                        f"{self.url} answered {response.status_code}, not the key document"
                    )
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > _MAX_KEY_DOCUMENT_BYTES:
                        raise KeyDocumentUnavailable(f"{self.url} sent an oversized document")
        except httpx.HTTPError as exc:
            raise KeyDocumentUnavailable(
                f"the key document at {self.url} could not be fetched ({type(exc).__name__})"
            ) from None
        try:
            document = json_input.loads(body)
        except ValueError:
            document = None
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
            raise KeyDocumentUnavailable(f"{self.url} did not return a key document")
        return keys


@dataclass(frozen=True)
class VerifiedProof:
    record: dict[str, Any]  # handle, seller, buyer, funded, domain_verified, as_of
    claims: dict[str, Any]
    expires_at: datetime


class ProofVerifier:
    """A relying party's verifier of reputation proofs (module docstring). Everything it
    trusts comes from its own configuration: the service base URL whose key document it
    fetches, its own origin (canonicalised with the service's own rule) and its nonce book."""

    def __init__(
        self,
        *,
        service_base_url: str,
        audience: str,
        nonces: NonceBook,
        http: httpx.Client | None = None,
        now: Callable[[], datetime] = clock.now,
    ) -> None:
        self.audience = tokens.canonical_origin(audience)  # InvalidOrigin if unusable
        self.keys = ServiceKeys(service_base_url, http=http)
        self._nonces = nonces
        self._now = now

    def verify(self, token: str, *, nonce: str) -> VerifiedProof:
        """Run the five steps on `token`, presented in the exchange for which this verifier
        issued `nonce`. Returns the record inside the proof; raises a TokenError subclass
        (see failed_step()) on the first check that fails."""
        if not tokens.is_proof_nonce(nonce):
            raise ValueError("the nonce you issued must be 32 lowercase hex characters")
        claims = self.keys.claims_of(token)  # 1
        tokens.check_type(claims, tokens.REPUTATION_PROOF_TYP)  # 2
        if not self._nonces.burn(nonce):  # 3
            raise NonceReused("the nonce was not issued here, has lapsed, or was already used")
        presented = claims.get("nonce")
        if not isinstance(presented, str) or not hmac.compare_digest(
            presented.encode(), nonce.encode()
        ):
            raise WrongNonce("the proof was minted for another nonce")
        if claims.get("aud") != self.audience:  # 4
            raise WrongAudience(f"the proof was minted for another audience than {self.audience}")
        tokens.check_time(claims, self._now())  # 5
        return VerifiedProof(
            record={k: v for k, v in claims.items() if k not in _ENVELOPE},
            claims=claims,
            expires_at=datetime.fromisoformat(claims["exp"]),
        )
