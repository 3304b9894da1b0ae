"""What an x402 payment buys and how it is offered: three tiers of credit packs, priced
in the asset's units (USDC has 6 decimals, so one unit is one µUSD), the v1 offers of a
402 body, the v2 `PAYMENT-REQUIRED` header and the `/.well-known/x402` manifest. Network,
asset and receiving wallet come from settings; nothing here names a chain of its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from x402.extensions.bazaar.resource_service import declare_discovery_extension
from x402.http.utils import encode_payment_required_header
from x402.schemas import PaymentRequired, PaymentRequirements, ResourceInfo
from x402.schemas.v1 import PaymentRequirementsV1

from agent_broker.config import Settings
from agent_broker.pricing import DEAL_FEE_MICRO, PACK_CREDITS, PACK_MICRO, usd

SCHEME = "exact"
MIME_TYPE = "application/json"
TIMEOUT_SECONDS = 60
SERVICE_NAME = "agent-broker"
# The one way a payment may move the asset: an EIP-3009 transferWithAuthorization signed
# by the payer. Named in every offer, so x402 clients do not choose Permit2.
ASSET_TRANSFER_METHOD = "eip3009"


@dataclass(frozen=True)
class Terms:
    """Where and in what a deployment is paid."""

    network: str  # the v1 name, e.g. "base"
    chain_id: int
    asset: str
    asset_name: str  # the token's EIP-712 domain, which the payer signs under
    asset_version: str
    pay_to: str
    terms_url: str

    @property
    def caip2(self) -> str:
        """The v2 name of the network, e.g. "eip155:8453"."""
        return f"eip155:{self.chain_id}"

    @classmethod
    def from_settings(cls, settings: Settings) -> Terms:
        # x402's EVM package loads web3 (a second and 30 MB): only deployments that take
        # payments pay for it.
        from x402.mechanisms.evm.default_assets import DEFAULT_ASSETS
        from x402.mechanisms.evm.v1.constants import V1_NETWORK_CHAIN_IDS

        chain_id = V1_NETWORK_CHAIN_IDS[settings.x402_network]
        if settings.x402_asset:
            asset = settings.x402_asset
            name, version = settings.x402_asset_name, settings.x402_asset_version
        else:
            usdc = DEFAULT_ASSETS[f"eip155:{chain_id}"][0]
            asset, name, version = usdc["asset"], usdc["name"], usdc["version"]
        return cls(
            network=settings.x402_network,
            chain_id=chain_id,
            asset=asset,
            asset_name=name,
            asset_version=version,
            pay_to=settings.x402_pay_to,
            terms_url=settings.terms_url,
        )


@dataclass(frozen=True)
class Tier:
    packs: int

    @property
    def credits(self) -> int:
        return self.packs * PACK_CREDITS

    @property
    def amount_micro(self) -> int:
        return self.packs * PACK_MICRO

    @property
    def deal_capable(self) -> bool:
        """Enough to hold a deal fee, so a new wallet can open a negotiation at once."""
        return self.amount_micro >= DEAL_FEE_MICRO

    @property
    def description(self) -> str:
        use = "enough to open a deal" if self.deal_capable else "posting and reading only"
        return f"{self.credits:,} credits ({self.packs} packs, ${usd(self.amount_micro)}): {use}"


# Deal-capable tiers first, the single pack last (the order of the offers in a 402).
TIERS = (Tier(10), Tier(100), Tier(1))
CHEAPEST = min(TIERS, key=lambda tier: tier.amount_micro)


def tier_for_amount(amount: str) -> Tier | None:
    return next((tier for tier in TIERS if str(tier.amount_micro) == amount), None)


def _extra(terms: Terms, tier: Tier) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "credits": tier.credits,
        "deal_capable": tier.deal_capable,
        "name": terms.asset_name,
        "version": terms.asset_version,
        "assetTransferMethod": ASSET_TRANSFER_METHOD,
    }
    if terms.terms_url:
        extra["termsUrl"] = terms.terms_url
    return extra


def offer_v1(terms: Terms, tier: Tier, resource: str) -> PaymentRequirementsV1:
    return PaymentRequirementsV1(
        scheme=SCHEME,
        network=terms.network,
        max_amount_required=str(tier.amount_micro),
        resource=resource,
        description=tier.description,
        mime_type=MIME_TYPE,
        pay_to=terms.pay_to,
        max_timeout_seconds=TIMEOUT_SECONDS,
        asset=terms.asset,
        extra=_extra(terms, tier),
    )


def offer_v2(terms: Terms, tier: Tier) -> PaymentRequirements:
    return PaymentRequirements(
        scheme=SCHEME,
        network=terms.caip2,
        asset=terms.asset,
        amount=str(tier.amount_micro),
        pay_to=terms.pay_to,
        max_timeout_seconds=TIMEOUT_SECONDS,
        extra=_extra(terms, tier),
    )


def _dumped(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True)


def tier_document(terms: Terms, tier: Tier) -> dict[str, Any]:
    """A tier as the manifest lists it: its v1 offer without a resource."""
    document = _dumped(offer_v1(terms, tier, resource=""))
    del document["resource"]
    return document


@dataclass(frozen=True)
class Challenge:
    """The payment-challenge members of a 402 problem document and its header."""

    members: dict[str, Any]
    headers: dict[str, str]


def challenge(
    terms: Terms,
    *,
    method: str,
    path: str,
    resource: str,
    error: str,
    credits_remaining: int = 0,
    credits_required: int = CHEAPEST.credits,
) -> Challenge:
    members = {
        "error": error,
        "x402Version": 1,
        "accepts": [_dumped(offer_v1(terms, tier, resource)) for tier in TIERS],
        "creditsRemaining": credits_remaining,
        "creditsRequired": credits_required,
    }
    discovery = declare_discovery_extension(body_type="json" if method != "GET" else None)
    discovery["bazaar"]["info"]["input"]["method"] = method
    required = PaymentRequired(
        x402_version=2,
        error=error,
        resource=ResourceInfo(
            url=resource,
            description=f"{method} {path}, paid with credits",
            mime_type=MIME_TYPE,
            service_name=SERVICE_NAME,
            tags=["marketplace", "agents"],
        ),
        accepts=[offer_v2(terms, tier) for tier in TIERS],
        extensions=discovery,
    )
    return Challenge(members, {"PAYMENT-REQUIRED": encode_payment_required_header(required)})
