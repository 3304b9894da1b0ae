"""Paying a 402 with a wallet (x402): the offers of the PAYMENT-REQUIRED header signed by
x402's own client with the wallet's key. x402's default spend controls apply (at most $1
a payment), so it takes the single-pack offer unless told otherwise."""

from __future__ import annotations

from typing import Any

PAYMENT_REQUIRED = "PAYMENT-REQUIRED"
PAYMENT_SIGNATURE = "PAYMENT-SIGNATURE"


def payment_header(wallet: Any, payment_required: str) -> str:
    """The PAYMENT-SIGNATURE value paying one offer of the challenge. `wallet` is an
    eth-account LocalAccount or its private key (hex)."""
    from eth_account import Account
    from x402 import x402ClientSync
    from x402.http.utils import decode_payment_required_header, encode_payment_signature_header
    from x402.mechanisms.evm.exact.register import register_exact_evm_client

    account = Account.from_key(wallet) if isinstance(wallet, str | bytes) else wallet
    payer = register_exact_evm_client(x402ClientSync(), account)
    required = decode_payment_required_header(payment_required)
    return encode_payment_signature_header(payer.create_payment_payload(required))
