"""Checking an escrow ruling (docs/interface.md §11.4) as anyone can: the signature against
the key document of the broker's own base URL, the type svc.ruling.v1, the expiry, and
that it rules on the deal and says what the deal shows."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx

from agent_broker import clock
from agent_broker.client.verify import ServiceKeys
from agent_broker.tokens import service as tokens

RULING_TYP = "svc.ruling.v1"


class RulingMismatch(tokens.TokenError):
    """A genuine ruling, but of another deal, or for another reason than the one given."""


def verify_ruling(
    token: str,
    *,
    service_base_url: str,
    deal_id: str | None = None,
    reason: str | None = None,
    http: httpx.Client | None = None,
    now: Callable[[], datetime] = clock.now,
) -> dict[str, Any]:
    """The ruling's claims once every check holds; raises a TokenError subclass (a
    KeyDocumentUnavailable when the keys could not be fetched) on the first that fails.
    `deal_id` and `reason`, when given, must be what the ruling names (the reason by its
    SHA-256)."""
    claims = ServiceKeys(service_base_url, http=http).claims_of(token)
    tokens.check_type(claims, RULING_TYP)
    tokens.check_time(claims, now())
    if deal_id is not None and claims.get("deal_id") != deal_id:
        raise RulingMismatch(f"the ruling is of deal {claims.get('deal_id')}, not {deal_id}")
    if reason is not None:
        digest = hashlib.sha256(reason.encode("utf-8")).hexdigest()
        presented = str(claims.get("reason_sha256", "")).encode()
        if not hmac.compare_digest(presented, digest.encode()):
            raise RulingMismatch("the ruling was signed for another reason text")
    return claims
