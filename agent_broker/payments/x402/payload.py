"""Reading a payment header: base64 JSON of an x402 v1 or v2 payment payload carrying an
EIP-3009 authorization and nothing else, matched to the tier it pays for. A header that
cannot be read is 400 invalid_input; one that reads but pays for nothing on offer, or
whose signature is not the payer's, is refused with the x402 reason a client knows
(PaymentRefused, answered by a fresh challenge). Everything here is checked before a
claim is written or the facilitator is asked."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from x402.schemas import PaymentPayload, PaymentRequirements
from x402.schemas.v1 import PaymentPayloadV1, PaymentRequirementsV1

from agent_broker import json_input
from agent_broker.payments.x402.offers import (
    SCHEME,
    Terms,
    Tier,
    offer_v1,
    offer_v2,
    tier_for_amount,
)
from agent_broker.problems import InvalidInput

# Headers a payment arrives in: v1 clients send X-PAYMENT, v2 clients PAYMENT-SIGNATURE.
V1_HEADER, V2_HEADER = "X-PAYMENT", "PAYMENT-SIGNATURE"
MAX_HEADER_CHARS = 8192
# x402's reason codes (x402.mechanisms.evm.constants, whose package loads web3), and two
# of this service's own.
ERR_UNSUPPORTED_SCHEME = "unsupported_scheme"
ERR_NETWORK_MISMATCH = "network_mismatch"
ERR_RECIPIENT_MISMATCH = "invalid_exact_evm_payload_recipient_mismatch"
ERR_AUTHORIZATION_VALUE_MISMATCH = "invalid_exact_evm_payload_authorization_value_mismatch"
ERR_NONCE_ALREADY_USED = "invalid_exact_evm_nonce_already_used"
ERR_INVALID_SIGNATURE = "invalid_exact_evm_payload_signature"
ERR_SETTLEMENT_PENDING = "settlement_pending"
ERR_ASSET_MISMATCH = "asset_mismatch"
ERR_PAYER_IS_PAY_TO = "payer_is_pay_to"

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_NONCE = re.compile(r"0x[0-9a-fA-F]{64}")
_SIGNATURE = re.compile(r"0x(?:[0-9a-fA-F]{2})+")
# The inner payload of the one transfer method offered (extra.assetTransferMethod
# "eip3009"). Anything beside it, such as a Permit2 authorization, could be settled by a
# facilitator from another wallet than the one `authorization` names: refused unread.
INNER_KEYS = frozenset({"signature", "authorization"})
# A plain ECDSA signature. A longer one is a smart-contract wallet's (EIP-1271, ERC-6492),
# which only the chain can check: the facilitator does, and the payer binding after
# settlement holds for it as for any payment.
EOA_SIGNATURE_BYTES = 65
_UINT = re.compile(r"[0-9]{1,78}")


class PaymentRefused(Exception):
    """A readable payment that is not accepted: `reason` is the x402 code, str() the why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Presented:
    payload: PaymentPayload | PaymentPayloadV1
    requirements: PaymentRequirements | PaymentRequirementsV1
    tier: Tier
    payer: str  # lower-case address
    nonce: str  # lower-case 0x + 64 hex
    # The signature was checked here to be the payer's (a plain ECDSA one); a contract
    # wallet's is left to the facilitator, so until then anyone could have named the payer.
    signature_checked: bool = False

    @property
    def version(self) -> int:
        return self.payload.x402_version


def _document(header: str, value: str) -> dict[str, Any]:
    if len(value) > MAX_HEADER_CHARS:
        raise InvalidInput(f"The {header} header is longer than {MAX_HEADER_CHARS} characters.")
    try:
        document = json_input.loads(base64.b64decode(value.strip(), validate=True))
    except (binascii.Error, ValueError):
        raise InvalidInput(f"The {header} header is not base64-encoded JSON.") from None
    if not isinstance(document, dict):
        raise InvalidInput(f"The {header} header does not hold a JSON object.")
    return document


def _payload(header: str, document: dict[str, Any]) -> PaymentPayload | PaymentPayloadV1:
    version = document.get("x402Version")
    model = {1: PaymentPayloadV1, 2: PaymentPayload}.get(version) if type(version) is int else None
    if model is None:
        raise InvalidInput(f"The {header} header's x402Version must be 1 or 2.")
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "payload"
        raise InvalidInput(
            f"The {header} payment is not valid at '{where}': {first['msg']}."
        ) from None


def _authorization(header: str, inner: dict[str, Any]) -> dict[str, str]:
    unexpected = sorted(str(key) for key in inner if key not in INNER_KEYS)
    if unexpected:
        raise InvalidInput(
            f"The {header} payment carries {', '.join(unexpected)}: only an EIP-3009 "
            "authorization and its signature are accepted (assetTransferMethod eip3009)."
        )
    authorization = inner.get("authorization")
    fields = {
        "from": _ADDRESS,
        "to": _ADDRESS,
        "value": _UINT,
        "validAfter": _UINT,
        "validBefore": _UINT,
        "nonce": _NONCE,
    }
    if not isinstance(authorization, dict):
        raise InvalidInput(
            f"The {header} payment carries no EIP-3009 authorization (the only kind accepted)."
        )
    for name, pattern in fields.items():
        value = authorization.get(name)
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise InvalidInput(f"The {header} payment's authorization.{name} is not valid.")
    signature = inner.get("signature")
    if not isinstance(signature, str) or _SIGNATURE.fullmatch(signature) is None:
        raise InvalidInput(f"The {header} payment's signature is not valid.")
    return authorization


def _same_address(a: str, b: str) -> bool:
    return a.lower() == b.lower()


def _check_signature(signature: str, authorization: dict[str, str], terms: Terms) -> bool:
    """The authorization's EIP-712 signature recovers its `from`, checked here so a forged
    payment costs no claim and no facilitator call. False: not a plain ECDSA signature,
    left to the facilitator."""
    # x402's EVM package loads web3: imported where payments are taken, not at startup.
    from x402.mechanisms.evm.eip712 import hash_eip3009_authorization
    from x402.mechanisms.evm.types import ExactEIP3009Authorization
    from x402.mechanisms.evm.verify import verify_eoa_signature

    raw = bytes.fromhex(signature[2:])
    if len(raw) != EOA_SIGNATURE_BYTES:
        return False
    # Lower-cased: EIP-712 encodes an address's bytes only, and a mixed-case address whose
    # checksum is off would be refused by the encoder rather than by the signature.
    digest = hash_eip3009_authorization(
        ExactEIP3009Authorization(
            from_address=authorization["from"].lower(),
            to=authorization["to"].lower(),
            value=authorization["value"],
            valid_after=authorization["validAfter"],
            valid_before=authorization["validBefore"],
            nonce=authorization["nonce"],
        ),
        terms.chain_id,
        terms.asset.lower(),
        terms.asset_name,
        terms.asset_version,
    )
    try:
        signed = verify_eoa_signature(digest, raw, authorization["from"])
    except ValueError:  # a v byte that is neither 27/28 nor 0/1
        signed = False
    if not signed:
        raise PaymentRefused(
            ERR_INVALID_SIGNATURE,
            "The signature is not the payer's: sign the authorization with the wallet it "
            "names in `from`.",
        )
    return True


def read(header: str, value: str, terms: Terms, resource: str) -> Presented:
    payload = _payload(header, _document(header, value))
    authorization = _authorization(header, payload.payload)
    if isinstance(payload, PaymentPayloadV1):
        scheme, network, amount = payload.scheme, payload.network, authorization["value"]
        asset, pay_to = terms.asset, authorization["to"]
        on_offer = terms.network
    else:
        accepted = payload.accepted
        scheme, network, amount = accepted.scheme, accepted.network, accepted.amount
        asset, pay_to = accepted.asset, accepted.pay_to
        on_offer = terms.caip2
    if scheme != SCHEME:
        raise PaymentRefused(ERR_UNSUPPORTED_SCHEME, f"Only the '{SCHEME}' scheme is accepted.")
    if network != on_offer:
        raise PaymentRefused(ERR_NETWORK_MISMATCH, f"Payments are taken on {on_offer} only.")
    if not _same_address(asset, terms.asset):
        raise PaymentRefused(ERR_ASSET_MISMATCH, f"Payments are taken in {terms.asset} only.")
    if not (_same_address(pay_to, terms.pay_to) and _same_address(authorization["to"], pay_to)):
        raise PaymentRefused(ERR_RECIPIENT_MISMATCH, f"Payments are made out to {terms.pay_to}.")
    if _same_address(authorization["from"], terms.pay_to):
        raise PaymentRefused(ERR_PAYER_IS_PAY_TO, "The receiving wallet cannot pay itself.")
    tier = tier_for_amount(amount)
    if tier is None:
        raise PaymentRefused(
            ERR_AUTHORIZATION_VALUE_MISMATCH,
            "The amount is not one of the offered tiers (see accepts[].maxAmountRequired).",
        )
    if authorization["value"] != amount:
        raise PaymentRefused(
            ERR_AUTHORIZATION_VALUE_MISMATCH,
            f"The authorization moves {authorization['value']}, not the {amount} accepted.",
        )
    checked = _check_signature(payload.payload["signature"], authorization, terms)
    requirements = (
        offer_v1(terms, tier, resource)
        if isinstance(payload, PaymentPayloadV1)
        else offer_v2(terms, tier)
    )
    return Presented(
        payload=payload,
        requirements=requirements,
        tier=tier,
        payer=authorization["from"].lower(),
        nonce=authorization["nonce"].lower(),
        signature_checked=checked,
    )
