"""Paying a 402 with a wallet (x402): the offers of the PAYMENT-REQUIRED header signed by
x402's own client with the wallet's key. x402's default spend controls apply (at most $1
a payment), so it takes the single-pack offer unless told otherwise. The same wallet signs
the service's Sign-In with Ethereum challenge to recover the account's key.

x402 and eth-account come with the `x402` extra (`pip install "agent-broker-client[x402]"`);
without it a client that is given a wallet raises ImportError saying so."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

PAYMENT_REQUIRED = "PAYMENT-REQUIRED"
PAYMENT_SIGNATURE = "PAYMENT-SIGNATURE"
PAYMENT_RESPONSE = "PAYMENT-RESPONSE"  # the receipt of a paid call: base64 JSON
# A paid answer waits while the service has its facilitator verify, then settle the
# payment (and settle once more when the transfer is reported pending), each call within
# the service's deadline; then the call itself runs.
FACILITATOR_CALLS = 3
# The service's deadline for one facilitator call (the server's
# agent_broker.payments.x402.facilitator.SETTLE_DEADLINE_SECONDS; a test keeps them equal).
SETTLE_DEADLINE_SECONDS = 30.0
ANSWER_MARGIN_SECONDS = 15.0
X402_MISSING = 'paying with a wallet needs the x402 extra: pip install "agent-broker-client[x402]"'


def paid_timeout_seconds() -> float:
    """How long to wait for the answer to a paid call: beyond the service's own deadlines,
    so a slow settlement is never taken for a lost answer (sending the payment again would
    only be refused as a replay)."""
    return FACILITATOR_CALLS * SETTLE_DEADLINE_SECONDS + ANSWER_MARGIN_SECONDS


def require_x402() -> None:
    """ImportError naming the extra unless x402 and eth-account are installed: checked
    before anything is sent, so a purchase is not started that could not be paid."""
    try:
        import eth_account  # noqa: F401
        import x402  # noqa: F401
    except ImportError as missing:
        raise ImportError(X402_MISSING) from missing


def receipt_of(header: str | None) -> Any:
    """The PAYMENT-RESPONSE receipt (transaction, network, payer...) as JSON, or the
    header as sent when it is not base64 JSON."""
    if not header:
        return None
    try:
        return json.loads(base64.b64decode(header, validate=True))
    except (ValueError, binascii.Error):
        return header


def _account(wallet: Any) -> Any:
    try:
        from eth_account import Account
    except ImportError as missing:
        raise ImportError(X402_MISSING) from missing

    return Account.from_key(wallet) if isinstance(wallet, str | bytes) else wallet


def payment_header(wallet: Any, payment_required: str) -> str:
    """The PAYMENT-SIGNATURE value paying one offer of the challenge. `wallet` is an
    eth-account LocalAccount or its private key (hex)."""
    try:
        from x402 import x402ClientSync
        from x402.http.utils import (
            decode_payment_required_header,
            encode_payment_signature_header,
        )
        from x402.mechanisms.evm.exact.register import register_exact_evm_client
    except ImportError as missing:
        raise ImportError(X402_MISSING) from missing

    payer = register_exact_evm_client(x402ClientSync(), _account(wallet))
    required = decode_payment_required_header(payment_required)
    return encode_payment_signature_header(payer.create_payment_payload(required))


def wallet_address(wallet: Any) -> str:
    return str(_account(wallet).address)


def sign_in_signature(wallet: Any, message: str, domain: str) -> str:
    """The wallet's EIP-191 signature of a Sign-In with Ethereum message, once the message
    is seen to be for `domain` and this wallet: a service elsewhere cannot have the wallet
    sign it a message for this one."""
    account = _account(wallet)  # ImportError without the extra
    from eth_account.messages import encode_defunct

    lines = message.split("\n")
    expected = f"{domain} wants you to sign in with your Ethereum account:"
    if len(lines) < 2 or lines[0] != expected or lines[1] != account.address:
        raise ValueError(
            f"the challenge is not a sign-in to {domain} for {account.address}; not signed"
        )
    signed = account.sign_message(encode_defunct(text=message))
    return "0x" + bytes(signed.signature).hex()
