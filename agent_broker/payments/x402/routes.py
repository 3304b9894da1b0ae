from __future__ import annotations

from fastapi import Request

from agent_broker.http.context import context_of
from agent_broker.http.routing import broker_router
from agent_broker.payments.x402.manifest import X402Manifest
from agent_broker.problems import NotFound

router = broker_router(tags=["x402"])


@router.get(
    "/.well-known/x402",
    summary="What can be paid for with x402: network, asset, receiving wallet, tiers, endpoints",
    responses={404: {"description": "x402 payments are off on this deployment"}},
)
async def x402_manifest(request: Request) -> dict:
    offers = context_of(request).optional(X402Manifest)
    if offers is None:
        raise NotFound("x402 payments are not enabled here.")
    return offers.document
