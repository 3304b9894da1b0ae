"""Where x402 meets a request: the payment challenge for a payable route reached with no
credential at all, and the dependency that settles a presented payment before any of the
route's own database work begins (the authenticator, agent_broker.auth, runs it first)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from x402.http.facilitator_client import HTTPFacilitatorClient

from agent_broker import clock
from agent_broker.config import Settings
from agent_broker.http.client_ip import client_ip
from agent_broker.http.context import context_of
from agent_broker.payments.x402 import offers, payload, service
from agent_broker.payments.x402.facilitator import facilitator_client
from agent_broker.payments.x402.service import Settlement
from agent_broker.pricing import CREDIT_MICRO, whole_credits
from agent_broker.problems import InsufficientFundsSelf, InvalidInput, Reason

# Where a settled payment waits for the answer (agent_broker.payments.x402.receipts).
STATE_KEY = "x402_settlement"
_CHALLENGE_DETAIL = (
    "This call is paid with credits and no credential came with it: pay with one of the "
    "offers in accepts[] (X-PAYMENT or PAYMENT-SIGNATURE), or send an x-api-key."
)


@dataclass(frozen=True)
class X402:
    """A deployment's payments: its terms and its facilitator."""

    terms: offers.Terms
    facilitator: HTTPFacilitatorClient

    @classmethod
    def from_settings(cls, settings: Settings) -> X402 | None:
        if not settings.x402_enabled:
            return None
        return cls(offers.Terms.from_settings(settings), facilitator_client(settings))


class PaymentChallenge(InsufficientFundsSelf):
    """402 with the x402 v1 menu in the body and the v2 menu in PAYMENT-REQUIRED."""


def resource_url(request: Request) -> str:
    """The absolute URL requested, on the deployment's public base (not the Host header)."""
    base = context_of(request).settings.public_base_url.rstrip("/")
    query = request.url.query
    return f"{base}{request.url.path}" + (f"?{query}" if query else "")


def challenge_problem(
    request: Request,
    *,
    detail: str = _CHALLENGE_DETAIL,
    invalid_reason: str | None = None,
    balance_micro: int = 0,
    required_micro: int | None = None,
) -> PaymentChallenge:
    x402: X402 = context_of(request).optional(X402)
    made = offers.challenge(
        x402.terms,
        method=request.method,
        path=request.url.path,
        resource=resource_url(request),
        error=detail,
        credits_remaining=whole_credits(balance_micro),
        credits_required=(
            offers.CHEAPEST.credits
            if required_micro is None
            else -(-required_micro // CREDIT_MICRO)  # whole credits, rounded up
        ),
    )
    members = dict(made.members)
    if invalid_reason:
        members["invalidReason"] = invalid_reason
    return PaymentChallenge(
        detail, reason=Reason.insufficient_funds_self, extra=members, headers=made.headers
    )


def presents_payment(request: Request) -> bool:
    headers = request.headers
    return payload.V1_HEADER in headers or payload.V2_HEADER in headers


async def settled_payment(request: Request) -> Settlement | None:
    """Settle the payment the request carries, if x402 is on and it carries one."""
    x402: X402 | None = context_of(request).optional(X402)
    if x402 is None or not presents_payment(request):
        return None
    headers = request.headers
    if payload.V1_HEADER in headers and payload.V2_HEADER in headers:
        raise InvalidInput("Send one payment: X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (v2).")
    if "x-api-key" in headers or "authorization" in headers:
        raise InvalidInput(
            "A payment is a credential of its own: send it without x-api-key or Authorization."
        )
    name = payload.V1_HEADER if payload.V1_HEADER in headers else payload.V2_HEADER
    context = context_of(request)
    # Every attempt costs a claim and a facilitator call: each source address, and each
    # payer whose signature was checked here (so nobody spends another wallet's budget),
    # has a budget of attempts.
    limit = context.settings.x402_attempt_rate_limit
    context.rate_limiter.hit("x402-attempt", limit, client_ip(request))
    try:
        presented = payload.read(name, headers[name], x402.terms, resource_url(request))
        if presented.signature_checked:
            context.rate_limiter.hit("x402-payer", limit, presented.payer)
        settlement = await service.settle(
            context.db, context.settings, x402.facilitator, presented, now=clock.now()
        )
    except payload.PaymentRefused as refused:
        raise challenge_problem(
            request, detail=str(refused), invalid_reason=refused.reason
        ) from None
    setattr(request.state, STATE_KEY, settlement)
    return settlement


class X402Payments:
    """x402 as the authenticator's payment scheme (agent_broker.auth.payment), registered
    by create_app when payments are on."""

    async def settle(self, request: Request) -> Settlement | None:
        return await settled_payment(request)

    def challenge(self, request: Request) -> PaymentChallenge:
        return challenge_problem(request)
