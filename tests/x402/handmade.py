"""Payments built by hand, so a test can tamper with any field: the first tier's inner
payload signed with eth-account, wrapped as a v1 or a v2 header."""

from __future__ import annotations

import time
from typing import Any

from tests.support.x402 import CAIP2, NETWORK, PAY_TO, USDC
from tests.support.x402_wallet import Wallet, sign_authorization, v1_header, v2_header

TIER = 5_000_000  # the first offer: 10 packs
OTHER = "0x" + "7b" * 20
HEADER = {1: "X-PAYMENT", 2: "PAYMENT-SIGNATURE"}
# The v2 offer of the first tier, as a PAYMENT-REQUIRED header carries it.
ACCEPTED = {
    "scheme": "exact",
    "network": CAIP2,
    "asset": USDC["asset"],
    "amount": str(TIER),
    "payTo": PAY_TO,
    "maxTimeoutSeconds": 60,
    "extra": {"name": USDC["name"], "version": USDC["version"]},
}

SIGNATURE = "invalid_exact_evm_payload_signature"
VALUE_MISMATCH = "invalid_exact_evm_payload_authorization_value_mismatch"
RECIPIENT_MISMATCH = "invalid_exact_evm_payload_recipient_mismatch"
VALID_BEFORE = "invalid_exact_evm_payload_authorization_valid_before"
VALID_AFTER = "invalid_exact_evm_payload_authorization_valid_after"


def signed(
    wallet: Wallet, *, valid_after_in: int = -60, valid_before_in: int = 300, **changes: Any
) -> dict[str, Any]:
    """The inner payload paying the first tier to PAY_TO, signed by hand, with `changes`
    (to, value, nonce, signer) and the validity window in seconds from now."""
    now = int(time.time())
    fields: dict[str, Any] = {
        "to": PAY_TO,
        "value": TIER,
        "valid_after": now + valid_after_in,
        "valid_before": now + valid_before_in,
    } | changes
    return sign_authorization(
        wallet,
        network=CAIP2,
        asset=USDC["asset"],
        name=USDC["name"],
        version=USDC["version"],
        **fields,
    )


def wrap(version: int, inner: dict[str, Any], **outer: Any) -> dict[str, str]:
    """Headers carrying `inner` as a v1 payment (outer: network, scheme) or as a v2 one
    (outer: changes to the accepted offer)."""
    if version == 1:
        value = v1_header(outer.get("network", NETWORK), inner, scheme=outer.get("scheme", "exact"))
    else:
        value = v2_header(ACCEPTED | outer, inner)
    return {HEADER[version]: value}
