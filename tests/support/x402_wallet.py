"""A test wallet that pays x402 offers. `pay_v1` and `pay_v2` go through x402's own client
code (x402ClientSync with the exact-EVM schemes), so the headers are what a real buyer
sends. `sign_authorization` builds the inner payload by hand with eth-account, so a test
can tamper with any field; `v1_header` and `v2_header` wrap such a payload into a header."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any

from eth_account import Account
from eth_account.messages import encode_typed_data
from eth_account.signers.local import LocalAccount
from x402 import x402ClientSync
from x402.http.utils import (
    decode_payment_required_header,
    encode_payment_signature_header,
    safe_base64_encode,
)
from x402.mechanisms.evm.constants import SCHEME_EXACT
from x402.mechanisms.evm.exact.register import register_exact_evm_client
from x402.schemas import PaymentRequired, PaymentRequiredV1, PaymentRequirementsV1

from tests.support.x402_facilitator import chain_id_of, transfer_typed_data


@dataclass(frozen=True)
class Wallet:
    account: LocalAccount = field(default_factory=Account.create)

    @property
    def address(self) -> str:
        return self.account.address


def _client(wallet: Wallet) -> x402ClientSync:
    client = register_exact_evm_client(x402ClientSync(), wallet.account)
    # x402's default spend controls pay only known assets and at most $1: a test wallet
    # pays whatever it is offered, and the tests judge the offer.
    return client.set_spend_controls(False)


def pay_v1(wallet: Wallet, accept: dict[str, Any]) -> str:
    """An X-PAYMENT header value paying one v1 offer (an element of a 402 body's accepts)."""
    required = PaymentRequiredV1(accepts=[PaymentRequirementsV1.model_validate(accept)])
    return encode_payment_signature_header(_client(wallet).create_payment_payload(required))


def pay_v2(wallet: Wallet, payment_required_header: str, index: int = 0) -> str:
    """A PAYMENT-SIGNATURE header value paying offer `index` of a PAYMENT-REQUIRED header."""
    required = decode_payment_required_header(payment_required_header)
    if not isinstance(required, PaymentRequired):
        raise ValueError("the PAYMENT-REQUIRED header is not x402 version 2")
    # Offer only the chosen one: x402's client pays the first offer its selector keeps.
    chosen = required.model_copy(update={"accepts": [required.accepts[index]]})
    return encode_payment_signature_header(_client(wallet).create_payment_payload(chosen))


def sign_authorization(
    wallet: Wallet,
    *,
    network: str,
    asset: str,
    name: str,
    version: str,
    to: str,
    value: int | str,
    valid_after: int | str,
    valid_before: int | str,
    nonce: str | None = None,
    signer: Wallet | None = None,
) -> dict[str, Any]:
    """The inner exact-EVM payload {"signature", "authorization"} moving `value` of `asset`
    from `wallet` to `to`, signed by `signer` (the wallet itself unless a test forges)."""
    authorization = {
        "from": wallet.address,
        "to": to,
        "value": str(value),
        "validAfter": str(valid_after),
        "validBefore": str(valid_before),
        "nonce": nonce if nonce is not None else "0x" + os.urandom(32).hex(),
    }
    typed = transfer_typed_data(
        chain_id=chain_id_of(network),
        asset=asset,
        name=name,
        version=version,
        authorization=authorization,
    )
    signed = (signer or wallet).account.sign_message(encode_typed_data(full_message=typed))
    return {"signature": "0x" + bytes(signed.signature).hex(), "authorization": authorization}


def _encode(document: dict[str, Any]) -> str:
    return safe_base64_encode(json.dumps(document, separators=(",", ":")))


def v1_header(network: str, inner: dict[str, Any], *, scheme: str = SCHEME_EXACT) -> str:
    """An X-PAYMENT header value carrying `inner` as a v1 payment on `network`."""
    return _encode({"x402Version": 1, "scheme": scheme, "network": network, "payload": inner})


def v2_header(
    accepted: dict[str, Any], inner: dict[str, Any], resource: dict[str, Any] | None = None
) -> str:
    """A PAYMENT-SIGNATURE header value carrying `inner` as a v2 payment of `accepted`."""
    document: dict[str, Any] = {"x402Version": 2, "payload": inner, "accepted": accepted}
    if resource is not None:
        document["resource"] = resource
    return _encode(document)


def decode_header(value: str) -> dict[str, Any]:
    """The JSON document inside a base64 x402 header value."""
    document = json.loads(base64.b64decode(value))
    if not isinstance(document, dict):
        raise ValueError("the header does not hold a JSON object")
    return document
