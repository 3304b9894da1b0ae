"""Wallet key recovery over HTTP (agent_broker.payments.x402.wallet): no key, since these
are how a holder who lost it gets back in; rate limited per source address (and per
wallet). Listed with the account routes."""

from __future__ import annotations

from fastapi import Request

from agent_broker import clock
from agent_broker.accounts.schemas import (
    WalletChallengeOut,
    WalletChallengeRequest,
    WalletRecovered,
    WalletRecoverRequest,
)
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router
from agent_broker.payments.x402 import wallet

router = broker_router(prefix="/v1/account", tags=["accounts"])


@router.post(
    "/wallet/challenge",
    response_model=WalletChallengeOut,
    responses=problems(400, 429),
    summary="A Sign-In with Ethereum message to sign with the paying wallet",
)
async def wallet_challenge(request: Request, body: WalletChallengeRequest) -> dict:
    context = context_of(request)
    return await wallet.challenge(
        context.db,
        context.settings,
        context.rate_limiter,
        body.address,
        source=client_ip(request),
        now=clock.now(),
    )


@router.post(
    "/wallet/recover",
    response_model=WalletRecovered,
    responses=problems(400, 404, 429),
    summary="A new API key for the account the signing wallet pays for",
)
async def wallet_recover(request: Request, body: WalletRecoverRequest) -> dict:
    context = context_of(request)
    return await wallet.recover(
        context.db,
        context.settings,
        context.rate_limiter,
        body.message,
        body.signature,
        source=client_ip(request),
        now=clock.now(),
    )
