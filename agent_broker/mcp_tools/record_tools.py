"""Public records: reputation lookup and attestations, and the ledger verdict."""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context

from agent_broker import clock
from agent_broker.ledger import verdict
from agent_broker.mcp_tools.common import (
    ONCE,
    READS,
    Id,
    Result,
    Toolbox,
    shaped,
)
from agent_broker.mcp_tools.plumbing import (
    as_caller,
    in_transaction,
)
from agent_broker.reputation import attestation, records
from agent_broker.reputation.schemas import PublicReputation, ReputationAttestation
from agent_broker.tokens.keys import Signer


def register_record_tools(box: Toolbox) -> None:
    context, tool, key_of = box.context, box.tool, box.key_of

    @tool(
        "lookup_reputation",
        "The public reputation record of a handle (no key needed). Free; 600 an hour.",
        READS,
    )
    async def lookup_reputation(ctx: Context, handle: Id) -> Result:
        where = box.source(ctx)
        view = await in_transaction(
            context,
            lambda session: records.lookup(
                session, handle, limiter=context.rate_limiter, source=where, now=clock.now()
            ),
        )
        return shaped(PublicReputation, view)

    @tool(
        "attest_reputation",
        "Sign your own reputation record: a statement (24 h), or with both nonce and "
        "audience a proof for that relying party (5 min, 120 an hour). Free.",
        ONCE,
    )
    async def attest_reputation(
        ctx: Context, nonce: str | None = None, audience: str | None = None
    ) -> Result:
        sent = {k: v for k, v in {"nonce": nonce, "audience": audience}.items() if v is not None}
        raw = attestation.RawBody(json.dumps(sent).encode() if sent else b"")
        signer = context.part(Signer)
        view = await as_caller(
            context,
            key_of(ctx),
            lambda session, caller: attestation.attest(
                session, caller, raw, signer=signer, limiter=context.rate_limiter, now=clock.now()
            ),
        )
        return shaped(ReputationAttestation, view, exclude_none=False)

    @tool(
        "verify_ledger",
        "The ledger-integrity verdict (is the money journal unaltered?). No key needed. Free.",
        READS,
    )
    async def verify_ledger(ctx: Context) -> Result:
        served = await in_transaction(
            context, lambda session: verdict.serve(session, now=clock.now())
        )
        return {"status_code": served.status_code, **served.body}
