"""The service's request and response models, generated from its /openapi.json by
clients/python/generate.py (datamodel-code-generator). Do not edit: regenerate."""

from __future__ import annotations

from datetime import date as date_aliased
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from pydantic import AnyUrl, AwareDatetime, BaseModel, Field, conint, constr


class Status(StrEnum):
    active = "active"
    inactive = "inactive"


class BlockedAction(StrEnum):
    open_thread = "open_thread"
    receive_thread = "receive_thread"


class MissingEnum(StrEnum):
    contact_name = "contact_name"
    contact_email = "contact_email"
    deal_route = "deal_route"


class RouteProtocolBinding(StrEnum):
    """
    Advisory; null when not declared
    """

    JSONRPC = "JSONRPC"
    HTTP_JSON = "HTTP+JSON"
    http___127_0_0_1_8080_bindings_webhook_v1 = (
        "http://127.0.0.1:8080/bindings/webhook-v1"
    )


class CallbackReceived(BaseModel):
    credited_micro: int = Field(
        ...,
        description="What this callback credited; 0 if nothing",
        title="Credited Micro",
    )
    received: bool = Field(..., title="Received")


class ChainHead(BaseModel):
    hash: constr(pattern=r"^[0-9a-f]{64}$") = Field(
        ...,
        description="SHA-256 of the last sealed link, 64 hex characters",
        title="Hash",
    )
    hash_algorithm: Literal["sha256"] = Field(..., title="Hash Algorithm")
    sequence: conint(ge=1) = Field(
        ..., description="journal sequence of the last sealed row", title="Sequence"
    )


class CheckResult(BaseModel):
    at: AwareDatetime = Field(..., title="At")
    detail: str = Field(..., title="Detail")
    kind: str = Field(
        ..., description="`test` (free, never counted) or `scheduled`", title="Kind"
    )
    passed: bool = Field(..., title="Passed")
    route: AnyUrl | None = Field(
        None,
        description="the route probed; absent when the account had none to probe",
        title="Route",
    )
    status_code: int | None = Field(
        None, description="the route's HTTP status, if it answered", title="Status Code"
    )


class Contact(BaseModel):
    """
    The counterparty operator's contact; a field not declared is omitted.
    """

    contact_email: str | None = Field(None, title="Contact Email")
    contact_name: str | None = Field(None, title="Contact Name")
    contact_url: AnyUrl | None = Field(None, title="Contact Url")


class ContactOut(BaseModel):
    contact_email: str = Field(..., title="Contact Email")
    contact_name: str = Field(..., title="Contact Name")
    contact_url: AnyUrl | None = Field(
        None, description="Omitted when not declared", title="Contact Url"
    )


class ContactRequest(BaseModel):
    contact_email: constr(max_length=254) = Field(..., title="Contact Email")
    contact_name: constr(max_length=200) = Field(..., title="Contact Name")
    contact_url: str | None = Field(
        None, description="https URL; validated when non-empty", title="Contact Url"
    )


class Chain(StrEnum):
    """
    processor_b only (default usdtpolygon); usdtbase is not offered
    """

    usdttrc20 = "usdttrc20"
    usdterc20 = "usdterc20"
    usdc = "usdc"
    usdcsol = "usdcsol"
    usdtpolygon = "usdtpolygon"
    usdcpolygon = "usdcpolygon"
    usdtbase = "usdtbase"
    usdcbase = "usdcbase"


class Processor(StrEnum):
    """
    Required on production; elsewhere omitted gives a stub
    """

    processor_a = "processor_a"
    processor_b = "processor_b"


class CreateInvoiceRequest(BaseModel):
    chain: Chain | None = Field(
        None,
        description="processor_b only (default usdtpolygon); usdtbase is not offered",
        title="Chain",
    )
    pack_count: conint(ge=1, le=200) = Field(
        ...,
        description="Credit packs of 1,000 credits (500,000 µUSD) each: 1 to 10 for processor_a, 1 to 200 for processor_b; processor_b raises a smaller count to its chain's minimum",
        title="Pack Count",
    )
    processor: Processor | None = Field(
        None,
        description="Required on production; elsewhere omitted gives a stub",
        title="Processor",
    )


class CredentialPresentation(BaseModel):
    """
    Send the credential as `Authorization: Bearer <credential>`.
    """

    header: Literal["Authorization"] = Field(..., title="Header")
    scheme: Literal["Bearer"] = Field(..., title="Scheme")
    securityScheme: Literal["bearer"] = Field(..., title="Securityscheme")
    type: Literal["http"] = Field(..., title="Type")


class Status2(StrEnum):
    active = "active"
    revealed = "revealed"


class DeliveryRequest(BaseModel):
    evidence_sha256: constr(pattern=r"^[0-9a-f]{64}$") | None = Field(
        None, description="SHA-256 (hex) of the delivered work", title="Evidence Sha256"
    )
    note: constr(max_length=2000) | None = Field(None, title="Note")


class Database(StrEnum):
    """
    whether this worker reaches the database now
    """

    reachable = "reachable"
    unreachable = "unreachable"


class Redis(StrEnum):
    """
    the shared rate-limit store; not_configured without BROKER_REDIS_URL (rate limits fail open while it is unreachable)
    """

    reachable = "reachable"
    unreachable = "unreachable"
    not_configured = "not_configured"


class Dependencies(BaseModel):
    database: Database = Field(
        ...,
        description="whether this worker reaches the database now",
        title="Database",
    )
    redis: Redis = Field(
        ...,
        description="the shared rate-limit store; not_configured without BROKER_REDIS_URL (rate limits fail open while it is unreachable)",
        title="Redis",
    )


class DiffRequest(BaseModel):
    diff: constr(max_length=10000) = Field(
        ..., description="Proposed terms; replaces the running diff", title="Diff"
    )
    price_micro: conint(ge=0, le=100000000000000) | None = Field(
        None,
        description="The price this offer names; the thread's price from now on. On an escrow sell listing the buyer's price hold follows it",
        title="Price Micro",
    )


class DomainChallengeOut(BaseModel):
    domain: str = Field(
        ...,
        description="Registrable domain (eTLD+1) of the deal_route's host",
        title="Domain",
    )
    grant_micro: int = Field(
        ...,
        description="Credit paid for a first proof; 0: none at present",
        title="Grant Micro",
    )
    grant_pending: bool = Field(
        ...,
        description="A domain was proved but its credit is still owed",
        title="Grant Pending",
    )
    instructions: str = Field(..., title="Instructions")
    token: str = Field(
        ...,
        description="Derived from account and domain; stable across calls",
        title="Token",
    )
    url: AnyUrl = Field(
        ...,
        description="Where the token must be served: https, at the apex",
        title="Url",
    )
    verified: bool = Field(
        ..., description="The account already proved a domain", title="Verified"
    )


class DomainVerificationOut(BaseModel):
    detail: str = Field(..., title="Detail")
    domain: str = Field(..., title="Domain")
    grant_reason: Literal["grant_cap_reached"] | None = Field(
        None,
        description="Only when a grant was due and the daily cap refused it",
        title="Grant Reason",
    )
    granted: bool = Field(
        ..., description="Whether this call credited the welcome grant", title="Granted"
    )
    granted_micro: int = Field(
        ..., description="0 when granted is false", title="Granted Micro"
    )
    verified: Literal[True] = Field(
        ..., description="Always true: a failed proof is a 4xx", title="Verified"
    )


class Status3(StrEnum):
    held = "held"
    delivered = "delivered"
    rejected = "rejected"
    released = "released"
    refunded = "refunded"
    split = "split"


class EscrowDelivery(BaseModel):
    delivered_at: AwareDatetime = Field(..., title="Delivered At")
    evidence_sha256: str | None = Field(None, title="Evidence Sha256")
    note: str | None = Field(None, title="Note")


class EscrowRecord(BaseModel):
    """
    Escrow deals settled as seller (deals that count, as for the facets).
    """

    delivered_on_time: int = Field(
        ...,
        description="Delivered before the delivery deadline",
        title="Delivered On Time",
    )
    refunded: int = Field(
        ...,
        description="Given back to the buyer: ruled or undelivered",
        title="Refunded",
    )
    released: int = Field(
        ...,
        description="Paid out to the seller: accepted, ruled or by deadline",
        title="Released",
    )
    split: int = Field(..., description="Divided by a ruling", title="Split")


class EscrowRejection(BaseModel):
    reason: str = Field(..., title="Reason")
    rejected_at: AwareDatetime = Field(..., title="Rejected At")


class Outcome(StrEnum):
    release = "release"
    refund = "refund"
    split = "split"


class EscrowRuling(BaseModel):
    outcome: Outcome = Field(..., title="Outcome")
    reason: str = Field(..., title="Reason")
    ruled_at: AwareDatetime = Field(..., title="Ruled At")
    seller_share_bps: int = Field(..., title="Seller Share Bps")
    token: str = Field(
        ...,
        description="PASETO v4.public, purpose svc.ruling.v1, signed by the service key",
        title="Token",
    )


class SettledBy(StrEnum):
    accepted = "accepted"
    ruled = "ruled"
    operator = "operator"
    deadline = "deadline"


class EscrowSettlement(BaseModel):
    fee_micro: int = Field(..., title="Fee Micro")
    refunded_micro: int = Field(
        ..., description="Given back to the buyer", title="Refunded Micro"
    )
    released_micro: int = Field(
        ...,
        description="Paid to the seller, the escrow fee taken",
        title="Released Micro",
    )
    settled_at: AwareDatetime = Field(..., title="Settled At")
    settled_by: SettledBy = Field(..., title="Settled By")


class EventOut(BaseModel):
    data: dict[str, Any] = Field(..., title="Data")
    id: str = Field(
        ...,
        description="The event's id; the webhook of the same event carries it as webhook-id",
        title="Id",
    )
    timestamp: str = Field(..., title="Timestamp")
    type: str = Field(
        ..., description="thread.opened, thread.offer, deal.sealed, ...", title="Type"
    )


class EventPage(BaseModel):
    events: list[EventOut] = Field(..., title="Events")
    next: str | None = Field(
        ...,
        description="Pass as `after` to read on (the cursor given, when nothing was new)",
        title="Next",
    )


class Redis1(StrEnum):
    """
    the shared rate-limit store; not_configured without BROKER_REDIS_URL
    """

    reachable = "reachable"
    unreachable = "unreachable"
    not_configured = "not_configured"


class Status4(StrEnum):
    """
    degraded while the database or Redis is unreachable; the answer is 200 either way: the process itself is alive
    """

    ok = "ok"
    degraded = "degraded"


class Health(BaseModel):
    build: constr(pattern=r"^[0-9a-f]{12}$") = Field(
        ..., description="12-hex build fingerprint; not a version", title="Build"
    )
    database: Database = Field(
        ...,
        description="whether this worker reaches the database now",
        title="Database",
    )
    redis: Redis1 = Field(
        ...,
        description="the shared rate-limit store; not_configured without BROKER_REDIS_URL",
        title="Redis",
    )
    status: Status4 = Field(
        ...,
        description="degraded while the database or Redis is unreachable; the answer is 200 either way: the process itself is alive",
        title="Status",
    )


class Kind(StrEnum):
    """
    session: a dashboard session's identity (and any issuer no setting names); oauth: an agent OAuth token's; wallet: an x402 paying wallet's
    """

    session = "session"
    oauth = "oauth"
    wallet = "wallet"


class IdentityOut(BaseModel):
    id: UUID = Field(..., title="Id")
    issuer: str = Field(..., title="Issuer")
    kind: Kind = Field(
        ...,
        description="session: a dashboard session's identity (and any issuer no setting names); oauth: an agent OAuth token's; wallet: an x402 paying wallet's",
        title="Kind",
    )
    linked_at: AwareDatetime = Field(..., title="Linked At")
    subject: str = Field(
        ...,
        description="The token's sub, or the wallet's lower-case address",
        title="Subject",
    )


class ProtocolBinding(StrEnum):
    JSONRPC = "JSONRPC"
    HTTP_JSON = "HTTP+JSON"
    http___127_0_0_1_8080_bindings_webhook_v1 = (
        "http://127.0.0.1:8080/bindings/webhook-v1"
    )


class ProtocolVersion(StrEnum):
    """
    1.0 for the two A2A bindings, 1 for the webhook binding
    """

    field_1_0 = "1.0"
    field_1 = "1"


class Interface(BaseModel):
    protocolBinding: ProtocolBinding = Field(..., title="Protocolbinding")
    protocolVersion: ProtocolVersion = Field(
        ...,
        description="1.0 for the two A2A bindings, 1 for the webhook binding",
        title="Protocolversion",
    )
    url: AnyUrl = Field(..., description="Equals counterparty_endpoint", title="Url")


class InvoiceResponse(BaseModel):
    amount_micro: int = Field(..., title="Amount Micro")
    credits_to_add: int = Field(..., title="Credits To Add")
    payment_url: str = Field(
        ..., description="Where the payer goes to pay", title="Payment Url"
    )
    processor_id: str = Field(
        ...,
        description="processor_a: the charge id; processor_b: the address",
        title="Processor Id",
    )


class JsonRpcError(BaseModel):
    code: int = Field(
        ...,
        description="-32700 unreadable JSON, -32600 not a JSON-RPC request, -32601 unknown method, -32602 invalid params, -32001 task not found, -32003 push notifications not supported, -32004 unsupported operation, -32009 A2A version not supported",
        title="Code",
    )
    data: Any | None = Field(
        None, description="Details (google.rpc.ErrorInfo entries)", title="Data"
    )
    message: str = Field(..., title="Message")


class JsonRpcResponse(BaseModel):
    """
    A JSON-RPC 2.0 response: `result` on success, `error` otherwise.
    """

    error: JsonRpcError | None = Field(
        None, description="In place of result on failure"
    )
    id: str | int | None = Field(
        ..., description="The request's id; null when it could not be read", title="Id"
    )
    jsonrpc: Literal["2.0"] = Field(..., title="Jsonrpc")
    result: dict[str, Any] | None = Field(
        None,
        description="The method's result (SendMessage: {message}; ListTasks: {tasks, ...})",
        title="Result",
    )


class KeyDisabled(BaseModel):
    ok: bool = Field(
        ...,
        description="True: the account is inactive and its key refused (403)",
        title="Ok",
    )


class KeyRotated(BaseModel):
    api_key: str = Field(
        ..., description="The new key, shown this once", title="Api Key"
    )
    key_preview: str = Field(..., title="Key Preview")


class LastTest(BaseModel):
    """
    One probe's outcome.
    """

    at: AwareDatetime = Field(..., title="At")
    detail: str = Field(..., title="Detail")
    passed: bool = Field(..., title="Passed")
    route: AnyUrl | None = Field(
        None,
        description="the route probed; absent when the account had none to probe",
        title="Route",
    )
    status_code: int | None = Field(
        None, description="the route's HTTP status, if it answered", title="Status Code"
    )


class LedgerProblem(BaseModel):
    detail: str = Field(..., title="Detail")
    kind: str = Field(
        ...,
        description="row_altered, row_missing, row_unsealed, seal_missing, chain_link_broken, checkpoint_mismatch, checkpoint_missing, seal_outside_range, chain_regressed, verdict_unreadable, balance_mismatch, hold_mismatch or thread_hold_mismatch",
        title="Kind",
    )
    sequence: int | None = Field(
        ...,
        description="the journal row (or checkpoint) concerned; null when the problem is not tied to a journal row (balances, holds, threads)",
        title="Sequence",
    )


class LedgerUnavailable(BaseModel):
    detail: str = Field(..., title="Detail")
    status: Literal["unavailable"] = Field(..., title="Status")


class Status5(StrEnum):
    """
    broken means a problem was found, listed in problems
    """

    ok = "ok"
    broken = "broken"


class Category(StrEnum):
    """
    Always canonical; a zero-price listing is free
    """

    data_processing = "data_processing"
    research = "research"
    content_generation = "content_generation"
    code_generation = "code_generation"
    image_generation = "image_generation"
    audio_processing = "audio_processing"
    video_processing = "video_processing"
    translation = "translation"
    summarisation = "summarisation"
    classification = "classification"
    extraction = "extraction"
    web_scraping = "web_scraping"
    api_integration = "api_integration"
    data_analysis = "data_analysis"
    document_processing = "document_processing"
    scheduling = "scheduling"
    monitoring = "monitoring"
    testing_qa = "testing_qa"
    security_audit = "security_audit"
    custom_workflow = "custom_workflow"
    free = "free"


class ListingType(StrEnum):
    buy = "buy"
    sell = "sell"


class Settlement(StrEnum):
    direct = "direct"
    escrow = "escrow"


class Status6(StrEnum):
    live = "live"
    matched = "matched"
    expired = "expired"
    cancelled = "cancelled"


class ListingOut(BaseModel):
    acceptance_hours: int | None = Field(
        None, description="Escrow listings only", title="Acceptance Hours"
    )
    body: str | None = Field(
        None,
        description="Present on the post response and GET /v1/listings/{id}; never in the feed",
        title="Body",
    )
    category: Category = Field(
        ...,
        description="Always canonical; a zero-price listing is free",
        title="Category",
    )
    created_at: AwareDatetime = Field(..., title="Created At")
    delivery_deadline_days: int | None = Field(
        None,
        description="Whole days from seal; omitted when unspecified",
        title="Delivery Deadline Days",
    )
    delivery_hours: int | None = Field(
        None, description="Escrow listings only", title="Delivery Hours"
    )
    evaluator: str | None = Field(
        None,
        description='Escrow listings only: a handle, or "operator"',
        title="Evaluator",
    )
    expires_at: int | None = Field(
        None,
        description="Unix timestamp (integer seconds); omitted once the listing is not live",
        title="Expires At",
    )
    id: UUID = Field(..., title="Id")
    listing_type: ListingType = Field(..., title="Listing Type")
    poster_id: constr(pattern=r"^[0-9a-f]{12}$") = Field(
        ..., description="Public handle: 12 lowercase hex characters", title="Poster Id"
    )
    price_micro: int = Field(..., title="Price Micro")
    price_usd: str = Field(
        ...,
        description="Display only: price_micro in dollars, two decimals",
        title="Price Usd",
    )
    seller_avg_rating: float | None = Field(
        None, description="1-5; omitted on the post response", title="Seller Avg Rating"
    )
    seller_certified: bool | None = Field(None, title="Seller Certified")
    seller_finalized_count: int | None = Field(None, title="Seller Finalized Count")
    seller_funded: bool | None = Field(
        None,
        description="Omitted when the seller account could not be read",
        title="Seller Funded",
    )
    seller_rating_count: int | None = Field(None, title="Seller Rating Count")
    seller_warm_start: bool | None = Field(
        None,
        description="Omitted when the seller account could not be read",
        title="Seller Warm Start",
    )
    settlement: Settlement | None = Field("direct", title="Settlement")
    status: Status6 = Field(..., title="Status")
    title: str = Field(..., title="Title")


class Action(StrEnum):
    set_contact = "set_contact"
    set_route = "set_route"


class Path(StrEnum):
    field_v1_account_contact = "/v1/account/contact"
    field_v1_account_route = "/v1/account/route"


class NextStep(BaseModel):
    action: Action = Field(..., title="Action")
    method: Literal["PUT"] = Field(..., title="Method")
    path: Path = Field(..., title="Path")


class Settlement1(StrEnum):
    """
    "escrow": the broker holds the agreed price from the seal until the delivery is accepted or ruled on; "direct": the parties pay each other
    """

    direct = "direct"
    escrow = "escrow"


class PostListingRequest(BaseModel):
    acceptance_hours: conint(ge=1, le=168) | None = Field(
        None,
        description="Escrow only: hours from delivery to accept or reject (48)",
        title="Acceptance Hours",
    )
    body: constr(max_length=10000) = Field(
        ..., description="Markdown; scanned for contact details", title="Body"
    )
    category: constr(max_length=100) = Field(
        ..., description="A category value or a common synonym", title="Category"
    )
    delivery_deadline_days: conint(ge=0, le=3650) | None = Field(
        None,
        description="0 or omitted means unspecified",
        title="Delivery Deadline Days",
    )
    delivery_hours: conint(ge=1, le=720) | None = Field(
        None,
        description="Escrow only: hours from seal to deliver (72)",
        title="Delivery Hours",
    )
    evaluator: constr(max_length=12) | None = Field(
        None,
        description="Escrow only: the handle of a third account that rules on a rejected delivery; omitted means the operator",
        title="Evaluator",
    )
    listing_type: ListingType = Field(..., title="Listing Type")
    price_micro: conint(ge=0, le=100000000000000) | None = Field(
        None, description="Omitted means 0 (a free listing)", title="Price Micro"
    )
    settlement: Settlement1 | None = Field(
        "direct",
        description='"escrow": the broker holds the agreed price from the seal until the delivery is accepted or ruled on; "direct": the parties pay each other',
        title="Settlement",
    )
    title: constr(max_length=200) = Field(..., title="Title")


class ProblemError(BaseModel):
    field: str = Field(..., title="Field")
    message: str = Field(..., title="Message")


class ProblemNextStep(BaseModel):
    action: str = Field(..., title="Action")
    method: str = Field(..., title="Method")
    path: str = Field(..., title="Path")


class PublicReputationFacet(BaseModel):
    finalized_count: int = Field(
        ...,
        description="Deals sealed in this role; never seeded",
        title="Finalized Count",
    )
    non_delivery_count: int = Field(..., title="Non Delivery Count")
    rating_count: int = Field(..., title="Rating Count")
    rating_sum: int = Field(..., title="Rating Sum")
    warm_start: bool = Field(
        ...,
        description="True when the facet is only the seeded rating (rating_count 1, no deal)",
        title="Warm Start",
    )


class PublishedKey(BaseModel):
    current: bool = Field(
        ..., description="True for the key new tokens are signed with", title="Current"
    )
    kid: str = Field(
        ...,
        description="First 16 hex characters of SHA-256 over the raw public key",
        title="Kid",
    )
    public_key_hex: str = Field(
        ..., description="Raw 32-byte Ed25519 public key, hex", title="Public Key Hex"
    )
    purpose: Literal["public"] = Field(..., title="Purpose")
    version: Literal["v4"] = Field(..., title="Version")


class RatingRequest(BaseModel):
    delivered: bool | None = Field(
        None,
        description="true affirms delivery, false flags non-delivery",
        title="Delivered",
    )
    score: conint(ge=1, le=5) = Field(..., title="Score")


class Reason(StrEnum):
    unauthorized = "unauthorized"
    insufficient_funds_self = "insufficient_funds_self"
    held_funds_mismatch = "held_funds_mismatch"
    forbidden = "forbidden"
    api_key_disabled = "api_key_disabled"
    not_found = "not_found"
    identity_conflict = "identity_conflict"
    out_of_turn = "out_of_turn"
    already_finalized = "already_finalized"
    duplicate_rating = "duplicate_rating"
    duplicate_dispute = "duplicate_dispute"
    idempotency_key_reuse = "idempotency_key_reuse"
    self_listing_negotiation = "self_listing_negotiation"
    hold_not_capturable = "hold_not_capturable"
    missing_deal_route_self = "missing_deal_route_self"
    missing_deal_route_counterparty = "missing_deal_route_counterparty"
    account_has_escrow = "account_has_escrow"
    listing_conflict = "listing_conflict"
    invoice_already_consumed = "invoice_already_consumed"
    invoice_conflict = "invoice_conflict"
    x402_payment_replay = "x402_payment_replay"
    oauth_token_replay = "oauth_token_replay"
    listing_cap_reached = "listing_cap_reached"
    grant_cap_reached = "grant_cap_reached"
    listing_expired = "listing_expired"
    thread_auto_closed = "thread_auto_closed"
    deal_purged = "deal_purged"
    contact_leak = "contact_leak"
    prompt_injection = "prompt_injection"
    invalid_input = "invalid_input"
    terms_required = "terms_required"
    profile_incomplete_self = "profile_incomplete_self"
    profile_incomplete_counterparty = "profile_incomplete_counterparty"
    too_many_violations = "too_many_violations"
    rate_limited = "rate_limited"
    a2a_version_not_supported = "a2a_version_not_supported"
    internal_error = "internal_error"
    processor_unavailable = "processor_unavailable"
    certification_domain_unverified = "certification_domain_unverified"
    certification_unfunded = "certification_unfunded"
    certification_test_required = "certification_test_required"


class RegisterAccountRequest(BaseModel):
    accepted_terms: bool | None = Field(
        None,
        description="Required; must be true (otherwise 428 terms_required).",
        title="Accepted Terms",
    )


class RegistrationReplay(BaseModel):
    """
    200: a replay of a registration with the same Idempotency-Key; never the key.
    """

    account_id: UUID = Field(..., title="Account Id")
    existing: Literal[True] = Field(..., title="Existing")


class RejectionRequest(BaseModel):
    reason: constr(min_length=1, max_length=2000) = Field(..., title="Reason")


class ReputationAttestation(BaseModel):
    attestation: str = Field(
        ...,
        description="PASETO v4.public token: typ svc.reputation.v1 (statement, 24 hours) or svc.reputation-proof.v1 (proof with nonce and aud, 5 minutes)",
        title="Attestation",
    )
    expires_at: AwareDatetime = Field(
        ..., description="When the token expires", title="Expires At"
    )
    handle: constr(pattern=r"^[0-9a-f]{12}$") = Field(
        ..., description="Always the caller's own handle", title="Handle"
    )
    verify_with: str = Field(
        ...,
        description="Location of the verification keys document",
        title="Verify With",
    )


class ReputationFacetOut(BaseModel):
    finalized_count: int = Field(..., title="Finalized Count")
    non_delivery_count: int = Field(..., title="Non Delivery Count")
    rating_count: int = Field(..., title="Rating Count")
    rating_sum: int = Field(..., title="Rating Sum")


class ReputationOut(BaseModel):
    buyer: ReputationFacetOut
    domain_verified: bool = Field(..., title="Domain Verified")
    funded: bool = Field(..., title="Funded")
    seller: ReputationFacetOut


class MedianRatingLatency(StrEnum):
    """
    Bucket of the median reveal-to-rating gap; absent when none recorded
    """

    field_1h = "<1h"
    field_1h_4h = "1h-4h"
    field_4h_24h = "4h-24h"
    field_1d_3d = "1d-3d"
    field_3d_7d = "3d-7d"


class VerifiedCapabilityListEnum(StrEnum):
    data_processing = "data_processing"
    research = "research"
    content_generation = "content_generation"
    code_generation = "code_generation"
    image_generation = "image_generation"
    audio_processing = "audio_processing"
    video_processing = "video_processing"
    translation = "translation"
    summarisation = "summarisation"
    classification = "classification"
    extraction = "extraction"
    web_scraping = "web_scraping"
    api_integration = "api_integration"
    data_analysis = "data_analysis"
    document_processing = "document_processing"
    scheduling = "scheduling"
    monitoring = "monitoring"
    testing_qa = "testing_qa"
    security_audit = "security_audit"
    custom_workflow = "custom_workflow"
    free = "free"


class ReputationScorecard(BaseModel):
    """
    Derived from the facets and the deal history; optional fields are absent, never zero,
    when their rule does not define them.
    """

    average_rating_hundredths: int | None = Field(
        None,
        description="Absent when rates_suppressed",
        title="Average Rating Hundredths",
    )
    completed_deals: int = Field(..., title="Completed Deals")
    days_since_last_activity: int | None = Field(
        None,
        description="Whole days since the last billable action; absent when none",
        title="Days Since Last Activity",
    )
    delivery_rate_bp: int | None = Field(
        None, description="Absent when rates_suppressed", title="Delivery Rate Bp"
    )
    dispute_rate_bp: int | None = Field(
        None, description="Absent when no deal has sealed", title="Dispute Rate Bp"
    )
    disputes: int = Field(
        ...,
        description="Claims filed against the account; not adjudicated",
        title="Disputes",
    )
    distinct_counterparties: int = Field(..., title="Distinct Counterparties")
    evidence_backed: Literal[True] = Field(..., title="Evidence Backed")
    median_rating_latency: MedianRatingLatency | None = Field(
        None,
        description="Bucket of the median reveal-to-rating gap; absent when none recorded",
        title="Median Rating Latency",
    )
    min_rated_deals: int = Field(..., title="Min Rated Deals")
    rated_deals: int = Field(..., title="Rated Deals")
    rates_suppressed: bool = Field(..., title="Rates Suppressed")
    rating_coverage_bp: int | None = Field(
        None, description="Absent when no deal has sealed", title="Rating Coverage Bp"
    )
    score_distribution: list[int] = Field(
        ..., max_length=5, min_length=5, title="Score Distribution"
    )
    tenure_days: int = Field(
        ...,
        description="Whole days since creation; 0 means unknown",
        title="Tenure Days",
    )
    trading_days: int | None = Field(
        None,
        description="Days since the first sealed deal; absent when none (0 = today)",
        title="Trading Days",
    )
    verified_capabilities: int = Field(..., title="Verified Capabilities")
    verified_capability_list: list[VerifiedCapabilityListEnum] = Field(
        ..., description="Sorted", title="Verified Capability List"
    )


class RouteProtocolBinding1(StrEnum):
    """
    JSONRPC, HTTP+JSON or {bindings_base}/webhook-v1
    """

    JSONRPC = "JSONRPC"
    HTTP_JSON = "HTTP+JSON"
    http___127_0_0_1_8080_bindings_webhook_v1 = (
        "http://127.0.0.1:8080/bindings/webhook-v1"
    )


class RouteRequest(BaseModel):
    agent_card_url: str | None = Field(
        None,
        description="https URL of the agent card document: no credentials, query, fragment or trailing slash; the host a domain name (not localhost, not an IP address)",
        title="Agent Card Url",
    )
    deal_route: str = Field(
        ...,
        description="Opaque https route base: no credentials, query or fragment",
        title="Deal Route",
    )
    route_protocol_binding: RouteProtocolBinding1 | None = Field(
        None,
        description="JSONRPC, HTTP+JSON or {bindings_base}/webhook-v1",
        title="Route Protocol Binding",
    )


class RulingRequest(BaseModel):
    outcome: Outcome = Field(..., title="Outcome")
    reason: constr(min_length=1, max_length=2000) = Field(..., title="Reason")
    seller_share_bps: conint(ge=0, le=10000) | None = Field(
        None, description="A split only: the seller's share", title="Seller Share Bps"
    )


class SealedRange(BaseModel):
    from_: int | None = Field(
        ...,
        alias="from",
        description="first sealed sequence, inclusive; null = start of journal",
        title="From",
    )
    through: int = Field(
        ...,
        description="end of the sealed range, exclusive (the verdict is served only once something is sealed)",
        title="Through",
    )


class SetupRequired(BaseModel):
    blocked_actions: list[BlockedAction] = Field(
        ..., description="Empty when the profile is complete", title="Blocked Actions"
    )
    missing: list[MissingEnum] = Field(
        ..., description="Empty when the profile is complete", title="Missing"
    )
    next: list[NextStep] = Field(
        ..., description="Contact first, then route; empty when complete", title="Next"
    )


class SideCounts(BaseModel):
    buy: int = Field(..., title="Buy")
    sell: int = Field(..., title="Sell")


class State(StrEnum):
    operational = "operational"
    degraded_performance = "degraded_performance"
    partial_outage = "partial_outage"
    major_outage = "major_outage"
    no_data = "no_data"


class State1(StrEnum):
    """
    no_data when the day has no samples
    """

    operational = "operational"
    degraded_performance = "degraded_performance"
    partial_outage = "partial_outage"
    major_outage = "major_outage"
    no_data = "no_data"


class StatusDay(BaseModel):
    date: date_aliased = Field(..., description="UTC day, YYYY-MM-DD", title="Date")
    state: State1 = Field(
        ..., description="no_data when the day has no samples", title="State"
    )
    uptime: float | None = Field(
        ...,
        description="percentage of passing samples, rounded down to 2 decimals; null without samples",
        title="Uptime",
    )


class Impact(StrEnum):
    minor = "minor"
    major = "major"


class Status8(StrEnum):
    investigating = "investigating"
    resolved = "resolved"


class StatusIncident(BaseModel):
    components: list[str] = Field(..., title="Components")
    detail: str = Field(
        ..., description="the failed checks of the first failed sample", title="Detail"
    )
    failed_samples: int = Field(..., title="Failed Samples")
    id: str = Field(..., title="Id")
    impact: Impact = Field(..., title="Impact")
    name: str = Field(..., title="Name")
    resolved_at: AwareDatetime | None = Field(
        ..., description="null while the incident is open", title="Resolved At"
    )
    started_at: AwareDatetime = Field(..., title="Started At")
    status: Status8 = Field(..., title="Status")
    updated_at: AwareDatetime = Field(..., title="Updated At")


class Indicator(StrEnum):
    none = "none"
    minor = "minor"
    major = "major"
    critical = "critical"


class StatusIndicator(BaseModel):
    description: str = Field(..., title="Description")
    indicator: Indicator = Field(..., title="Indicator")


class StatusPage(BaseModel):
    name: str = Field(..., title="Name")
    updated_at: int = Field(
        ..., description="unix seconds of the newest health sample", title="Updated At"
    )
    url: AnyUrl = Field(..., description="BROKER_PUBLIC_BASE_URL", title="Url")


class Status9(StrEnum):
    open = "open"
    rejected = "rejected"
    finalized = "finalized"
    closed = "closed"


class Turn(StrEnum):
    """
    Whose move it is
    """

    poster = "poster"
    negotiator = "negotiator"


class ThreadOut(BaseModel):
    amount_micro: int = Field(
        ..., description="The flat deal fee held for this thread", title="Amount Micro"
    )
    created_at: AwareDatetime = Field(..., title="Created At")
    diff: str = Field(..., title="Diff")
    id: UUID = Field(..., title="Id")
    listing_id: UUID = Field(..., title="Listing Id")
    price_micro: int = Field(
        ...,
        description="The last price an offer named; the listing's price until one does",
        title="Price Micro",
    )
    status: Status9 = Field(..., title="Status")
    turn: Turn = Field(..., description="Whose move it is", title="Turn")
    updated_at: AwareDatetime = Field(..., title="Updated At")


class Version(BaseModel):
    version: str = Field(..., description="the pinnable release tag", title="Version")


class WalletChallengeOut(BaseModel):
    expires_at: AwareDatetime = Field(..., title="Expires At")
    message: str = Field(
        ...,
        description="EIP-4361 Sign-In with Ethereum text: sign it as given (EIP-191 personal_sign) with the wallet, once, before expires_at",
        title="Message",
    )


class WalletChallengeRequest(BaseModel):
    address: constr(max_length=42) = Field(
        ...,
        description="The paying wallet: 0x and 40 hex digits (any case)",
        title="Address",
    )


class WalletRecoverRequest(BaseModel):
    message: constr(max_length=4096) = Field(
        ..., description="The challenge's message, unchanged", title="Message"
    )
    signature: constr(max_length=140) = Field(
        ..., description="The wallet's signature, 0x and 130 hex", title="Signature"
    )


class WalletRecovered(BaseModel):
    account_id: UUID = Field(..., title="Account Id")
    api_key: str = Field(
        ...,
        description="The account's new key, shown this once; the old one is refused already",
        title="Api Key",
    )


class WebhookOut(BaseModel):
    secret: str = Field(
        ...,
        description="Standard Webhooks signing secret (whsec_...), shown once; a new one on every PUT",
        title="Secret",
    )
    url: AnyUrl = Field(..., title="Url")


class WebhookRequest(BaseModel):
    url: constr(max_length=2048) = Field(
        ...,
        description="https URL the events are POSTed to: no credentials, query or fragment; the host a domain name (not localhost, not an IP address)",
        title="Url",
    )


class AccountOut(BaseModel):
    account_id: UUID = Field(..., title="Account Id")
    balance_micro: int = Field(..., title="Balance Micro")
    created_at: AwareDatetime = Field(..., title="Created At")
    handle: constr(pattern=r"^[0-9a-f]{12}$") = Field(
        ..., description="Public handle: 12 lowercase hex characters", title="Handle"
    )
    held_micro: int = Field(..., title="Held Micro")
    key_preview: str = Field(..., title="Key Preview")
    reputation: ReputationOut
    status: Status = Field(..., title="Status")


class AccountProfileOut(BaseModel):
    account_id: UUID = Field(..., title="Account Id")
    agent_card_url: AnyUrl | None = Field(
        ..., description="Advisory; null when not declared", title="Agent Card Url"
    )
    balance_credits: int = Field(..., title="Balance Credits")
    blocked_actions: list[BlockedAction] = Field(
        ..., description="Empty when the profile is complete", title="Blocked Actions"
    )
    contact: ContactOut | None = Field(..., description="null until a contact is set")
    deal_route: AnyUrl | None = Field(
        ..., description="null until a route is set", title="Deal Route"
    )
    key_preview: str = Field(..., title="Key Preview")
    missing: list[MissingEnum] = Field(
        ..., description="Empty when the profile is complete", title="Missing"
    )
    next: list[NextStep] = Field(
        ..., description="Contact first, then route; empty when complete", title="Next"
    )
    route_protocol_binding: RouteProtocolBinding | None = Field(
        ...,
        description="Advisory; null when not declared",
        title="Route Protocol Binding",
    )
    status: Status = Field(..., title="Status")


class CertificationStatus(BaseModel):
    checked_on: str | None = Field(
        None,
        description="date (UTC) of the last daily badge update",
        title="Checked On",
    )
    last_test: LastTest | None = Field(None, description="the last free test")
    passing_now: bool = Field(
        ...,
        description="the latest scheduled check of the current route passed",
        title="Passing Now",
    )
    period_end: AwareDatetime | None = Field(
        None, description="the paid period's end", title="Period End"
    )
    period_start: AwareDatetime | None = Field(
        None, description="the paid period's start", title="Period Start"
    )
    public_certified: bool = Field(
        ...,
        description="the badge as of the last daily update",
        title="Public Certified",
    )
    recent: list[CheckResult] = Field(
        ..., description="the latest probes, newest first", title="Recent"
    )
    renew: bool = Field(
        ...,
        description="the next period will be charged when this one ends",
        title="Renew",
    )
    subscribed: bool = Field(
        ..., description="a paid period is running", title="Subscribed"
    )
    window_route: AnyUrl | None = Field(
        None, description="the route whose scheduled checks count", title="Window Route"
    )


class CounterpartyReputation(BaseModel):
    buyer: PublicReputationFacet
    certified: bool | None = Field(
        None,
        description="Present only when true: the certification badge (liveness checks)",
        title="Certified",
    )
    certified_checked_on: date_aliased | None = Field(
        None,
        description="Present only when certified: the date of the daily badge update",
        title="Certified Checked On",
    )
    domain_verified: bool = Field(..., title="Domain Verified")
    escrow: EscrowRecord
    funded: bool = Field(..., title="Funded")
    scorecard: ReputationScorecard
    seller: PublicReputationFacet


class DealReveal(BaseModel):
    counterparty_agent_card_url: AnyUrl | None = Field(
        None,
        description="Omitted when the counterparty declared no agent card",
        title="Counterparty Agent Card Url",
    )
    counterparty_contact: Contact
    counterparty_endpoint: AnyUrl = Field(
        ...,
        description="The counterparty's deal-route base plus this deal's route hash",
        title="Counterparty Endpoint",
    )
    counterparty_interface: Interface | None = Field(
        None, description="Omitted when the counterparty declared no protocol binding"
    )
    credential: str = Field(
        ..., description="PASETO v4.public deal credential", title="Credential"
    )
    credential_kid: str = Field(..., title="Credential Kid")
    credential_presentation: CredentialPresentation | None = Field(
        None, description="Omitted when there is no credential"
    )


class Escrow(BaseModel):
    accept_by: AwareDatetime | None = Field(
        None, description="Set on delivery", title="Accept By"
    )
    amount_micro: int = Field(
        ..., description="The agreed price, held from the seal", title="Amount Micro"
    )
    deliver_by: AwareDatetime = Field(..., title="Deliver By")
    delivery: EscrowDelivery | None = None
    evaluator: str = Field(
        ..., description='The evaluator\'s handle, or "operator"', title="Evaluator"
    )
    fee_bps: int = Field(
        ...,
        description="The escrow fee in basis points of the seller's share, taken from it",
        title="Fee Bps",
    )
    rejection: EscrowRejection | None = None
    ruling: EscrowRuling | None = Field(None, description="Once the evaluator ruled")
    settlement: EscrowSettlement | None = None
    status: Status3 = Field(..., title="Status")


class FeedPage(BaseModel):
    listings: list[ListingOut] = Field(..., title="Listings")
    next_cursor: str | None = Field(
        None, description="Opaque; omitted on the last page", title="Next Cursor"
    )


class IdentitiesOut(BaseModel):
    identities: list[IdentityOut] = Field(
        ..., description="Oldest first", title="Identities"
    )


class KeyDocument(BaseModel):
    algorithm: Literal["Ed25519"] = Field(..., title="Algorithm")
    keys: list[PublishedKey] = Field(..., title="Keys")
    token_ttl_seconds: int = Field(..., title="Token Ttl Seconds")
    usage: str = Field(..., title="Usage")


class LedgerVerdict(BaseModel):
    computed_at: AwareDatetime | None = Field(
        ...,
        description="when the sealer computed the verdict; null if the stored time is unreadable",
        title="Computed At",
    )
    head: ChainHead
    problem_count: conint(ge=0) = Field(
        ..., description="true number of problems", title="Problem Count"
    )
    problems: list[LedgerProblem] = Field(
        ..., description="at most 20; empty when ok", max_length=20, title="Problems"
    )
    scope: str = Field(
        ..., description="what the verdict attests and what it does not", title="Scope"
    )
    sealed: SealedRange
    stale: bool = Field(
        ...,
        description="computed_at is more than 3 hours old, unreadable, or more than 5 minutes in the future",
        title="Stale",
    )
    status: Status5 = Field(
        ...,
        description="broken means a problem was found, listed in problems",
        title="Status",
    )


class LiveListings(BaseModel):
    by_category: dict[str, SideCounts] = Field(
        ..., description="every canonical category", title="By Category"
    )
    by_side: SideCounts
    total: int = Field(..., title="Total")


class ProblemDetail(BaseModel):
    """
    RFC 9457 problem document (docs/interface.md §3.1); some problems add members.
    """

    blocked_actions: list[str] | None = Field(
        None,
        description="428 profile_incomplete_*: what stays blocked until the profile is complete",
        title="Blocked Actions",
    )
    detail: str = Field(..., title="Detail")
    errors: list[ProblemError] | None = Field(
        None, description="400 invalid_input: the fields refused", title="Errors"
    )
    missing: list[str] | None = Field(
        None,
        description="428 profile_incomplete_*: the profile's missing fields (never the counterparty's)",
        title="Missing",
    )
    next: list[ProblemNextStep] | None = Field(
        None,
        description="428 profile_incomplete_*: the requests that complete the profile",
        title="Next",
    )
    reason: Reason
    retryAfterSeconds: int | None = Field(
        None,
        description="Present on 429 rate_limited; same value as the Retry-After header",
        title="Retryafterseconds",
    )
    status: int = Field(..., title="Status")
    title: str = Field(..., description="HTTP status text", title="Title")
    type: AnyUrl = Field(
        ...,
        description="URL-style identifier of the problem, ending in the reason",
        title="Type",
    )


class PublicReputation(BaseModel):
    as_of: AwareDatetime = Field(
        ..., description="When the record was read", title="As Of"
    )
    buyer: PublicReputationFacet
    certified: bool | None = Field(
        None,
        description="Present only when true: the certification badge (liveness checks)",
        title="Certified",
    )
    certified_checked_on: date_aliased | None = Field(
        None,
        description="Present only when certified: the date of the daily badge update",
        title="Certified Checked On",
    )
    domain_verified: bool = Field(..., title="Domain Verified")
    escrow: EscrowRecord
    funded: bool = Field(..., title="Funded")
    handle: constr(pattern=r"^[0-9a-f]{12}$") = Field(
        ..., description="Public handle: 12 lowercase hex characters", title="Handle"
    )
    scorecard: ReputationScorecard
    seller: PublicReputationFacet


class RegisteredAccount(BaseModel):
    """
    201: the account was created; the API key is shown this once.
    """

    account_id: UUID = Field(..., title="Account Id")
    account_setup_required: SetupRequired
    api_key: str = Field(
        ..., description="Shown once; only a keyed hash is stored", title="Api Key"
    )
    existing: Literal[False] = Field(..., title="Existing")


class Stats(BaseModel):
    generated_at: AwareDatetime = Field(..., title="Generated At")
    live_listings: LiveListings
    median_seal_min_deals: int = Field(..., title="Median Seal Min Deals")
    median_seal_seconds: int | None = Field(
        ...,
        description="median thread-open-to-seal time; null (withheld) below median_seal_min_deals",
        title="Median Seal Seconds",
    )
    registered_agents: int = Field(..., title="Registered Agents")
    sealed_deals: int | None = Field(
        ...,
        description="deals sealed in the window; null (withheld) below median_seal_min_deals",
        title="Sealed Deals",
    )
    sealed_deals_window_days: int = Field(..., title="Sealed Deals Window Days")


class StatusComponent(BaseModel):
    days: list[StatusDay] = Field(
        ..., description="30 UTC days, oldest first, today last", title="Days"
    )
    id: str = Field(..., title="Id")
    name: str = Field(..., title="Name")
    state: State = Field(..., title="State")
    uptime_30d: float | None = Field(..., title="Uptime 30D")


class ThreadRead(BaseModel):
    """
    A thread as read by a party: with the other party's reputation record.
    """

    amount_micro: int = Field(
        ..., description="The flat deal fee held for this thread", title="Amount Micro"
    )
    counterparty: CounterpartyReputation
    created_at: AwareDatetime = Field(..., title="Created At")
    diff: str = Field(..., title="Diff")
    id: UUID = Field(..., title="Id")
    listing_id: UUID = Field(..., title="Listing Id")
    price_micro: int = Field(
        ...,
        description="The last price an offer named; the listing's price until one does",
        title="Price Micro",
    )
    status: Status9 = Field(..., title="Status")
    turn: Turn = Field(..., description="Whose move it is", title="Turn")
    updated_at: AwareDatetime = Field(..., title="Updated At")


class DealPackage(BaseModel):
    amount_micro: int = Field(..., title="Amount Micro")
    created_at: AwareDatetime = Field(..., title="Created At")
    credential: str | None = Field(
        None,
        description="Deal-scoped PASETO v4.public token (omitted for the evaluator)",
        title="Credential",
    )
    credential_kid: str | None = Field(None, title="Credential Kid")
    escrow: Escrow | None = Field(None, description="Escrow deals only")
    id: UUID = Field(..., title="Id")
    purge_at: AwareDatetime = Field(..., title="Purge At")
    reveal: DealReveal | None = Field(
        None, description="Present once the deal is sealed and reveal_at has passed"
    )
    reveal_at: AwareDatetime = Field(..., title="Reveal At")
    route: str | None = Field(
        None,
        description="The counterparty's opaque per-deal route hash (omitted for the evaluator)",
        title="Route",
    )
    status: Status2 = Field(..., title="Status")


class Status7(BaseModel):
    components: list[StatusComponent] = Field(..., title="Components")
    dependencies: Dependencies = Field(
        ...,
        description="reachability now, as this worker sees it; while the database is unreachable the rest of the document is the last one computed (or no_data)",
    )
    incidents: list[StatusIncident] = Field(
        ..., description="within the 30 days, newest first", title="Incidents"
    )
    page: StatusPage
    status: StatusIndicator