from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Response

from agent_broker import clock
from agent_broker.accounts.caller import Caller
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.http.policy import KEY_OR_OAUTH, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.reputation import attestation, records
from agent_broker.reputation.schemas import (
    AttestationChallenge,
    PublicReputation,
    ReputationAttestation,
)
from agent_broker.tokens.keys import Signer

router = broker_router(prefix="/v1", tags=["reputation"])

Minter = Annotated[Caller, authenticated(kinds=KEY_OR_OAUTH)]


@router.get(
    "/reputation/{handle}",
    response_model=PublicReputation,
    response_model_exclude_none=True,
    responses=problems(404, 429),
)
@db_bound
def lookup(request: Request, handle: str, session: ReadSession) -> dict:
    """The public reputation record of a handle (no key)."""
    return records.lookup(
        session,
        handle,
        limiter=context_of(request).rate_limiter,
        source=client_ip(request),
        now=clock.now(),
    )


async def raw_body(request: Request) -> attestation.RawBody:
    """The attestation body, read here rather than by FastAPI so that every malformed body
    is a 400 invalid_input decided by the attestation rules (never a 422), and never read
    past 1 KiB + 1 byte: a longer body (declared or streamed) is only flagged."""
    limit = attestation.MAX_BODY_BYTES
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        return attestation.RawBody(b"", oversize=True)
    received = bytearray()
    async for chunk in request.stream():
        received += chunk
        if len(received) > limit:
            return attestation.RawBody(bytes(received[: limit + 1]), oversize=True)
    return attestation.RawBody(bytes(received))


@router.post(
    "/account/reputation/attestation",
    response_model=ReputationAttestation,
    responses=problems(400, 401, 403, 404, 429),
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {"application/json": {"schema": AttestationChallenge.model_json_schema()}},
        }
    },
)
@db_bound
def attest(
    request: Request,
    response: Response,
    caller: Minter,
    session: ReadSession,
    body: Annotated[attestation.RawBody, Depends(raw_body)],
) -> dict:
    """Sign the caller's own reputation record: a statement (no body, `{}`, or other keys;
    24 hours), or with both `nonce` and `audience` a proof for that relying party (5
    minutes, at most 120 per account per hour). Verify with /.well-known/paseto-keys.json."""
    response.headers["Cache-Control"] = "no-store"
    return attestation.attest(
        session,
        caller,
        body,
        signer=context_of(request).part(Signer),
        limiter=context_of(request).rate_limiter,
        now=clock.now(),
    )
