"""GET /.well-known/x402: what a wallet can pay for here, with what and to whom."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute

from agent_broker.http.policy import policy_of
from agent_broker.payments.x402.offers import CHEAPEST, TIERS, Terms, tier_document

# The payable operations, as an agent reads them; the two entry points need no ids.
SUMMARIES = {
    ("POST", "/v1/listings"): "Post a buy or sell listing",
    ("GET", "/v1/feed"): "Read the feed of live listings",
    ("GET", "/v1/listings/{listing_id}"): "Read one listing",
    ("POST", "/v1/listings/{listing_id}/threads"): "Open a negotiation on a listing",
    ("GET", "/v1/listings/{listing_id}/threads"): "List the negotiations on your listing",
    ("GET", "/v1/threads/{thread_id}"): "Read a negotiation",
    ("POST", "/v1/threads/{thread_id}/offers"): "Make an offer in your turn",
    ("POST", "/v1/threads/{thread_id}/close"): "Close a negotiation",
    ("POST", "/v1/threads/{thread_id}/finalize"): "Accept the standing offer and seal the deal",
    ("GET", "/v1/deals/{deal_id}"): "Read a sealed deal and its reveal",
    ("POST", "/v1/deals/{deal_id}/ratings"): "Rate the counterparty of a deal",
    ("POST", "/v1/deals/{deal_id}/dispute"): "Dispute a deal",
}
ENTRY_POINTS = {("POST", "/v1/listings"), ("GET", "/v1/feed")}


def payable_operations(routers: Iterable[APIRouter]) -> tuple[tuple[str, str], ...]:
    """(method, path) of every metered route: what a payment can be made for."""
    found = []
    for router in routers:
        for route in router.routes:
            policy = policy_of(route) if isinstance(route, APIRoute) else None
            if policy is not None and policy.metered:
                found += [(method, route.path) for method in sorted(route.methods)]
    return tuple(found)


def _endpoint(base: str, method: str, path: str) -> dict[str, Any]:
    endpoint: dict[str, Any] = {
        "method": method,
        "path": path,
        "summary": SUMMARIES[(method, path)],
    }
    if (method, path) in ENTRY_POINTS:
        endpoint.update(url=f"{base}{path}", entryPoint=True)
    else:
        endpoint["templated"] = True
    return endpoint


def manifest(payable: Sequence[tuple[str, str]], terms: Terms, base_url: str) -> dict[str, Any]:
    base = base_url.rstrip("/")
    document: dict[str, Any] = {
        "x402Version": 1,
        "x402Versions": [1, 2],
        "network": terms.network,
        "asset": terms.asset,
        "payTo": terms.pay_to,
    }
    if terms.terms_url:
        document["termsUrl"] = terms.terms_url
    document |= {
        "tiers": [tier_document(terms, tier) for tier in TIERS],
        "endpoints": [_endpoint(base, m, p) for m, p in payable],
        "documentation": {"openapi": f"{base}/openapi.json"},
        "clientNotes": {
            "minAmountRequired": str(CHEAPEST.amount_micro),
            "notes": [
                "A payable call sent with no credential answers 402: its body lists the "
                "offers (x402 v1) and its PAYMENT-REQUIRED header the same offers in v2, "
                f"where the network is {terms.caip2}.",
                "Pay with X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2): an EIP-3009 "
                "transferWithAuthorization of exactly one tier's amount, signed under the "
                "token's EIP-712 domain given in each offer's extra (name, version).",
                "A payment buys the tier's credits for the paying wallet's account, then "
                "the call runs as that account. A wallet's first payment opens the account "
                "and returns its API key once, in the body's new_account member.",
                "With the key, later calls need no payment until the credits run out. "
                "Each authorization (nonce) is accepted once: a second presentation is "
                "409 x402_payment_replay.",
                "The receipt of a settled payment is in X-PAYMENT-RESPONSE and PAYMENT-RESPONSE.",
            ],
        },
    }
    return document


@dataclass(frozen=True, slots=True)
class X402Manifest:
    """What a payment can be made for on this app, and the /.well-known/x402 document that
    says so: made once, when the app is built."""

    operations: tuple[tuple[str, str], ...]
    document: dict[str, Any]

    @classmethod
    def build(
        cls, operations: tuple[tuple[str, str], ...], terms: Terms, base_url: str
    ) -> X402Manifest:
        return cls(operations, manifest(operations, terms, base_url))
