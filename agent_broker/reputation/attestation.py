"""Reputation attestations (docs/interface.md §13): a signed statement of the caller's own public
record, or a proof of it bound to a relying party's nonce and origin.

The refusals come in a fixed order, because the proof-mint rate (docs/interface.md §13.2) counts
every challenge that passes the body and scope checks, including one then refused for its nonce or
audience, and never a plain statement:

1. body shape: at most 1 KiB, empty or a JSON object, `nonce` and `audience` both or neither
   (400 invalid_input);
2. scope (403 forbidden; API keys hold every scope);
3. count the mint (429 rate_limited past 120 per account per hour), challenges only;
4. nonce and audience values (400 invalid_input);
5. the caller's own record (404 not_found), then sign."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.accounts.caller import Caller
from agent_broker.clock import rfc3339
from agent_broker.problems import Forbidden, InvalidInput, NotFound
from agent_broker.reputation import records
from agent_broker.reputation import service as reputation
from agent_broker.reputation.limiter import Limiter
from agent_broker.tokens import service as tokens
from agent_broker.tokens.keys import Signer

MAX_BODY_BYTES = 1024  # docs/interface.md §13.1: the body is at most 1 KiB
PROOF_MINT_LIMIT_NAME = "reputation-proof-mint"
PROOF_MINT_RATE_LIMIT = "120/hour"  # docs/interface.md §13.2, per account
VERIFY_WITH = "/.well-known/paseto-keys.json"
# docs/interface.md §2.3 and §13.2: `read` is the route's own scope; a proof also needs
# account:write.
STATEMENT_SCOPES = frozenset({"read"})
PROOF_SCOPES = frozenset({"read", "account:write"})


@dataclass(frozen=True)
class RawBody:
    """The request body as received: at most MAX_BODY_BYTES + 1 bytes are ever read, and
    `oversize` says the body was longer than MAX_BODY_BYTES (declared or counted)."""

    data: bytes
    oversize: bool = False


@dataclass(frozen=True)
class Challenge:
    """A proof challenge whose body passed the shape checks. The values are as sent; their
    own rules are checked only after the mint is counted."""

    nonce: Any
    audience: Any


def parse_body(body: RawBody) -> Challenge | None:
    """The challenge the body carries, or None for a plain statement (no body, `{}`, or an
    object naming neither `nonce` nor `audience`). Raises 400 invalid_input for a body over
    1 KiB, one that is not UTF-8 JSON (duplicate keys and NaN/Infinity included), a JSON
    value that is not an object, or an object naming exactly one of the two keys."""
    if body.oversize or len(body.data) > MAX_BODY_BYTES:
        raise _invalid("body", f"The attestation body is over {MAX_BODY_BYTES} bytes (1 KiB).")
    if not body.data:
        return None
    try:
        value = json.loads(
            body.data.decode("utf-8"),
            object_pairs_hook=_object_without_duplicates,
            parse_constant=_refuse_constant,
        )
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _invalid("body", "The request body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise _invalid("body", "The attestation body must be a JSON object.")
    has_nonce, has_audience = "nonce" in value, "audience" in value
    if has_nonce != has_audience:
        missing = "audience" if has_nonce else "nonce"
        raise _invalid(
            missing,
            "A proof challenge needs both nonce and audience; send neither for a plain statement.",
        )
    if not has_nonce:
        return None
    return Challenge(nonce=value["nonce"], audience=value["audience"])


def require_scopes(caller: Caller, needed: Iterable[str]) -> None:
    """The scope check of docs/interface.md §13.2: an API key holds every scope; a token only
    those it carries (the auth seam fills `caller.scopes`)."""
    missing = sorted(scope for scope in needed if not caller.has_scope(scope))
    if missing:
        raise Forbidden(f"This token lacks the scope(s) needed here: {', '.join(missing)}.")


def proof_values(challenge: Challenge) -> tuple[str, str]:
    """(nonce, canonical audience), or 400 invalid_input when either fails its shape rule."""
    if not tokens.is_proof_nonce(challenge.nonce):
        raise _invalid("nonce", "nonce must be exactly 32 lowercase hexadecimal characters.")
    try:
        audience = tokens.canonical_origin(challenge.audience)
    except tokens.InvalidOrigin as exc:
        raise _invalid("audience", f"audience must be an https origin: {exc}.") from None
    return challenge.nonce, audience


def attest(
    session: Session,
    caller: Caller,
    body: RawBody,
    *,
    signer: Signer,
    limiter: Limiter,
    now: datetime,
) -> dict[str, Any]:
    """Mint the caller's statement or proof (the answer of docs/interface.md §13.1)."""
    challenge = parse_body(body)
    require_scopes(caller, PROOF_SCOPES if challenge else STATEMENT_SCOPES)
    proof: tuple[str, str] | None = None
    if challenge is not None:
        limiter.hit(PROOF_MINT_LIMIT_NAME, PROOF_MINT_RATE_LIMIT, caller.account_id)
        proof = proof_values(challenge)
    account = caller.account
    if set(reputation.facets(session, account.id)) != set(reputation.ROLES):
        raise NotFound("Your reputation record could not be found.")
    # The public record's fields, every warm_start flag included, and no scorecard: tokens
    # carry counters only, so a change to the scorecard's derivation never invalidates them.
    record = records.statement_claims(session, account, now=now)
    if proof is None:
        claims = {**record, "typ": tokens.REPUTATION_STATEMENT_TYP}
        ttl = tokens.REPUTATION_STATEMENT_TTL
    else:
        nonce, audience = proof
        claims = {**record, "typ": tokens.REPUTATION_PROOF_TYP, "nonce": nonce, "aud": audience}
        ttl = tokens.REPUTATION_PROOF_TTL
    minted = tokens.mint(signer, claims, ttl, now)
    return {
        "attestation": minted.token,
        "handle": account.handle,
        "expires_at": rfc3339(minted.expires_at),
        "verify_with": VERIFY_WITH,
    }


def _invalid(field: str, detail: str) -> InvalidInput:
    return InvalidInput(detail, extra={"errors": [{"field": field, "message": detail}]})


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two values for one key would let two parsers read two different challenges.
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("duplicate key")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
