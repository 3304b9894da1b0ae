from __future__ import annotations

from fastapi import Request

from agent_broker.http.routing import broker_router
from agent_broker.payments.x402.manifest import manifest
from agent_broker.problems import NotFound

router = broker_router(tags=["x402"])


@router.get(
    "/.well-known/x402",
    summary="What can be paid for with x402: network, asset, receiving wallet, tiers, endpoints",
    responses={404: {"description": "x402 payments are off on this deployment"}},
)
async def x402_manifest(request: Request) -> dict:
    state = request.app.state
    if state.x402 is None:
        raise NotFound("x402 payments are not enabled here.")
    if getattr(state, "x402_manifest", None) is None:
        state.x402_manifest = manifest(
            state.payable, state.x402.terms, state.settings.public_base_url
        )
    return state.x402_manifest
