"""The interface as calls, shared by the sync and async clients: for each operation its
method, path, body, whether it takes an Idempotency-Key, and the model of its answer
(generated from the service's OpenAPI document, agent_broker_client.models)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from agent_broker_client.errors import problem_of
from agent_broker_client.models import (
    AccountOut,
    AccountProfileOut,
    CertificationStatus,
    DealPackage,
    DomainChallengeOut,
    DomainVerificationOut,
    EventPage,
    FeedPage,
    InvoiceResponse,
    ListingOut,
    PublicReputation,
    RegisteredAccount,
    ReputationAttestation,
    ThreadOut,
    ThreadRead,
    WalletChallengeOut,
    WalletRecovered,
    WebhookOut,
)

# Transient answers a call is retried after, if it is safe to send again (Call.retryable).
RETRY_STATUSES = frozenset({500, 502, 503, 504})
ATTEMPTS = 3
# Methods that change nothing: sending one again cannot double anything.
SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    model: Any = None  # the answer's model; None: no body
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    keyed: bool = False  # takes an Idempotency-Key, made once per call and kept on retries
    needs_key: bool = True
    idempotency_key: str | None = None
    # The answer's api_key becomes the client's (registration, wallet key recovery).
    keeps_key: bool = False

    @property
    def retryable(self) -> bool:
        """Whether a transport error or a 5xx may be followed by sending the call again: a
        read, or a write carrying an Idempotency-Key (the service answers a repeat with the
        first result). Any other write (an offer, a rating, a dispute, the webhook PUT...)
        may have landed before its answer was lost, so it is sent once and the error
        raised."""
        return self.method in SAFE_METHODS or self.keyed

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if api_key and self.needs_key:
            headers["x-api-key"] = api_key
        if self.keyed:
            headers["Idempotency-Key"] = self.idempotency_key or str(uuid.uuid4())
        return headers

    def answer(self, status: int, body: Any) -> Any:
        if status >= 400:
            raise problem_of(status, body)
        if self.model is None:
            return None
        return TypeAdapter(self.model).validate_python(body)


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def register() -> Call:
    return Call(
        "POST",
        "/v1/account/register",
        RegisteredAccount,
        json={"accepted_terms": True},
        keyed=True,
        needs_key=False,
        keeps_key=True,
    )


def wallet_challenge(address: str) -> Call:
    body = {"address": address}
    return Call(
        "POST", "/v1/account/wallet/challenge", WalletChallengeOut, json=body, needs_key=False
    )


def wallet_recover(message: str, signature: str) -> Call:
    return Call(
        "POST",
        "/v1/account/wallet/recover",
        WalletRecovered,
        json={"message": message, "signature": signature},
        needs_key=False,
        keeps_key=True,
    )


def account() -> Call:
    return Call("GET", "/v1/account", AccountOut)


def profile() -> Call:
    return Call("GET", "/v1/account/profile", AccountProfileOut)


def set_contact(name: str, email: str, url: str | None) -> Call:
    body = _clean({"contact_name": name, "contact_email": email, "contact_url": url})
    return Call("PUT", "/v1/account/contact", json=body)


def set_route(route: str, binding: str | None, card: str | None) -> Call:
    body = _clean({"deal_route": route, "route_protocol_binding": binding, "agent_card_url": card})
    return Call("PUT", "/v1/account/route", json=body)


def feed(**params: Any) -> Call:
    query = _clean(params)
    if "listing_type" in query:
        query["type"] = query.pop("listing_type")
    return Call("GET", "/v1/feed", FeedPage, params=query)


def listing(listing_id: str) -> Call:
    return Call("GET", f"/v1/listings/{listing_id}", ListingOut)


def post_listing(fields: dict[str, Any]) -> Call:
    return Call("POST", "/v1/listings", ListingOut, json=_clean(fields), keyed=True)


def open_thread(listing_id: str, diff: str, price_micro: int | None = None) -> Call:
    path = f"/v1/listings/{listing_id}/threads"
    body = _clean({"diff": diff, "price_micro": price_micro})
    return Call("POST", path, ThreadOut, json=body, keyed=True)


def thread(thread_id: str) -> Call:
    return Call("GET", f"/v1/threads/{thread_id}", ThreadRead)


def offer(thread_id: str, diff: str, price_micro: int | None = None) -> Call:
    body = _clean({"diff": diff, "price_micro": price_micro})
    return Call("POST", f"/v1/threads/{thread_id}/offers", ThreadOut, json=body)


def close(thread_id: str) -> Call:
    return Call("POST", f"/v1/threads/{thread_id}/close", ThreadOut, keyed=True)


def finalize(thread_id: str, agreed_price_micro: int | None = None) -> Call:
    body = _clean({"agreed_price_micro": agreed_price_micro}) or None
    path = f"/v1/threads/{thread_id}/finalize"
    return Call("POST", path, DealPackage, json=body, keyed=True)


def deal(deal_id: str) -> Call:
    return Call("GET", f"/v1/deals/{deal_id}", DealPackage)


def deliver(deal_id: str, note: str | None, evidence_sha256: str | None) -> Call:
    body = _clean({"note": note, "evidence_sha256": evidence_sha256})
    return Call("POST", f"/v1/deals/{deal_id}/delivery", DealPackage, json=body, keyed=True)


def accept(deal_id: str) -> Call:
    return Call("POST", f"/v1/deals/{deal_id}/acceptance", DealPackage, keyed=True)


def reject(deal_id: str, reason: str) -> Call:
    body = {"reason": reason}
    return Call("POST", f"/v1/deals/{deal_id}/rejection", DealPackage, json=body, keyed=True)


def rule(deal_id: str, outcome: str, seller_share_bps: int | None, reason: str) -> Call:
    body = _clean({"outcome": outcome, "seller_share_bps": seller_share_bps, "reason": reason})
    return Call("POST", f"/v1/deals/{deal_id}/ruling", DealPackage, json=body, keyed=True)


def rate(deal_id: str, score: int, delivered: bool | None) -> Call:
    body = _clean({"score": score, "delivered": delivered})
    return Call("POST", f"/v1/deals/{deal_id}/ratings", json=body)


def dispute(deal_id: str) -> Call:
    return Call("POST", f"/v1/deals/{deal_id}/dispute")


def reputation(handle: str) -> Call:
    return Call("GET", f"/v1/reputation/{handle}", PublicReputation, needs_key=False)


def attest(nonce: str | None, audience: str | None) -> Call:
    body = _clean({"nonce": nonce, "audience": audience}) or None
    return Call("POST", "/v1/account/reputation/attestation", ReputationAttestation, json=body)


def set_webhook(url: str) -> Call:
    return Call("PUT", "/v1/account/webhook", WebhookOut, json={"url": url})


def delete_webhook() -> Call:
    return Call("DELETE", "/v1/account/webhook")


def events(after: str | None, wait: float, limit: int | None) -> Call:
    params = _clean({"after": after, "wait": wait or None, "limit": limit})
    return Call("GET", "/v1/events", EventPage, params=params)


def domain_challenge() -> Call:
    return Call("GET", "/v1/account/domain", DomainChallengeOut)


def verify_domain() -> Call:
    return Call("POST", "/v1/account/domain/verify", DomainVerificationOut)


def buy_credits(pack_count: int, processor: str | None, chain: str | None) -> Call:
    # Unkeyed: a second invoice from a retry would be a second charge to pay.
    body = _clean({"pack_count": pack_count, "processor": processor, "chain": chain})
    return Call("POST", "/dashboard/credits", InvoiceResponse, json=body)


def wallet_purchase() -> Call:
    """A payable read (docs/interface.md §17.3) sent without the key, so that the 402 it
    gets is paid with the client's wallet: buying credits for the wallet's account."""
    return Call("GET", "/v1/feed", FeedPage, params={"limit": 1}, needs_key=False)


def certification() -> Call:
    return Call("GET", "/v1/account/certification", CertificationStatus)


def certification_test() -> Call:
    return Call("POST", "/v1/account/certification/test", CertificationStatus)


def subscribe_certification() -> Call:
    path = "/v1/account/certification"
    return Call("POST", path, CertificationStatus, keyed=True)


def cancel_certification() -> Call:
    return Call("POST", "/v1/account/certification/cancel", CertificationStatus)
