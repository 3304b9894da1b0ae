"""The A2A 1.0 agent card (docs/interface.md §20.2) and its signature, made with the a2a-sdk's own
signer: a detached JWS (EdDSA, Ed25519) over the card's canonical form as A2A defines it
(the card as its protobuf JSON, empty and default members dropped, then RFC 8785), so any
A2A client's verifier accepts it. The served card keeps members outside that canonical form.
The key's public half is the one OKP key of /.well-known/jwks.json; its kid is derived as
in docs/interface.md §14.1 (the first 16 hex of SHA-256 over the raw public key)."""

from __future__ import annotations

import base64
from functools import cached_property
from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import create_agent_card_signer

from agent_broker import RELEASE_TAG, pricing
from agent_broker.config import Settings
from agent_broker.tokens.keys import Signer, card_signer_for, raw_public

ONBOARDING_SKILL = {
    "id": "onboarding",
    "name": "Onboarding",
    "description": (
        "Explains how to start trading here: register and keep the API key, set contact "
        "and deal route, fund the account (domain grant, credit packs, x402), buy versus "
        "sell, prices, and where the OpenAPI document and the x402 manifest are."
    ),
    "tags": ["onboarding", "marketplace", "agents"],
}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_of(signer: Signer) -> dict[str, str]:
    return {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": _b64url(raw_public(signer.public_key)),
        "kid": signer.kid,
        "use": "sig",
        "alg": "EdDSA",
    }


def jwks_document(signer: Signer) -> dict[str, Any]:
    return {"keys": [jwk_of(signer)]}


def card_body(settings: Settings, *, x402_enabled: bool) -> dict[str, Any]:
    base = settings.public_base_url.rstrip("/")
    params: dict[str, Any] = {
        "openapi": f"{base}/openapi.json",
        "llms": f"{base}/llms.txt",
        "llmsFull": f"{base}/llms-full.txt",
        "robots": f"{base}/robots.txt",
        "status": f"{base}/status.json",
        "agentCardKeys": f"{base}/.well-known/jwks.json",
        "dealCredentialKeys": f"{base}/.well-known/paseto-keys.json",
        "livenessContract": f"{base}/bindings/liveness-v1",
        "mcp": f"{base}/mcp",
        "pricing": {
            "currency": "USD",
            "creditMicroUsd": pricing.CREDIT_MICRO,
            "postingFeeCredits": pricing.POSTING_FEE_MICRO // pricing.CREDIT_MICRO,
            "dealFeeCredits": pricing.DEAL_FEE_MICRO // pricing.CREDIT_MICRO,
            "packCredits": pricing.PACK_CREDITS,
            "packUsd": pricing.usd(pricing.PACK_MICRO),
            "certificationPeriodCredits": (
                pricing.CERTIFICATION_PERIOD_MICRO // pricing.CREDIT_MICRO
            ),
        },
    }
    if x402_enabled:
        params["x402Manifest"] = f"{base}/.well-known/x402"
    if settings.security_contact:
        params["securityTxt"] = f"{base}/.well-known/security.txt"
    return {
        "name": "agent-broker",
        "description": (
            "A marketplace broker for automated agents: post buy or sell listings, "
            "negotiate in turns, seal a deal that reveals each side's contact and route, "
            "and build a signed public reputation."
        ),
        "version": RELEASE_TAG,
        "documentationUrl": f"{base}/llms.txt",
        "iconUrl": f"{base}/icon.svg",
        "provider": {"organization": settings.operator_name, "url": base},
        "supportedInterfaces": [
            {"url": f"{base}/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "streaming": False,
            "pushNotifications": False,
            "extendedAgentCard": False,
            "extensions": [
                {
                    "uri": f"{base}/a2a/extensions/machine-contract/v1",
                    "required": False,
                    "params": params,
                }
            ],
        },
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json", "text/plain", "application/problem+json"],
        "securitySchemes": {
            "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "x-api-key"}}
        },
        "securityRequirements": [],
        "skills": [ONBOARDING_SKILL],
    }


def signed_card(settings: Settings, signer: Signer, *, x402_enabled: bool) -> dict[str, Any]:
    body = card_body(settings, x402_enabled=x402_enabled)
    header = {
        "alg": "EdDSA",
        "jku": f"{settings.public_base_url.rstrip('/')}/.well-known/jwks.json",
        "kid": signer.kid,
        "typ": "JOSE",
    }
    sign = create_agent_card_signer(signer.private_key, header)  # type: ignore[arg-type]
    signed = sign(parse_agent_card(body))
    signatures = [
        {"protected": signature.protected, "signature": signature.signature}
        for signature in signed.signatures
    ]
    return {**body, "signatures": signatures}


class PublishedCard:
    """The card this app publishes and the key that signs it. Signed on first use, then
    kept (its content changes only with the settings): in development the card key is a
    file made on first use, and an app that never serves its card makes none."""

    def __init__(self, settings: Settings, *, x402_enabled: bool) -> None:
        self._settings, self._x402_enabled = settings, x402_enabled
        if settings.card_signing_key:
            _ = self.signer  # a configured key is checked when the app is built

    @cached_property
    def signer(self) -> Signer:
        return card_signer_for(self._settings)

    @cached_property
    def signed(self) -> dict[str, Any]:
        return signed_card(self._settings, self.signer, x402_enabled=self._x402_enabled)

    @property
    def jwks(self) -> dict[str, Any]:
        return jwks_document(self.signer)
