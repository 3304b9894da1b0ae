"""An independent PASETO v4.public verifier, written from the specification with nothing
but `cryptography`, so the service's tokens are checked by code that shares none of its
own (nor pyseto's)."""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

HEADER = b"v4.public."

# RFC 8032 section 7.1, test 1: a known Ed25519 key pair.
RFC8032_SEED_HEX = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC8032_PUBLIC_HEX = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def le64(n: int) -> bytes:
    return (n & ~(1 << 63)).to_bytes(8, "little")


def pae(pieces: list[bytes]) -> bytes:
    return le64(len(pieces)) + b"".join(le64(len(piece)) + piece for piece in pieces)


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def split(token: str) -> tuple[bytes, bytes, bytes]:
    """(message, signature, footer) of a v4.public token with a footer."""
    assert token.startswith(HEADER.decode())
    body, footer = token[len(HEADER) :].split(".")
    raw = b64url_decode(body)
    return raw[:-64], raw[-64:], b64url_decode(footer)


def footer_of(token: str) -> dict[str, Any]:
    return json.loads(split(token)[2])


def verify(token: str, public_key_hex: str) -> dict[str, Any]:
    """Claims of `token`; raises cryptography's InvalidSignature when it does not verify."""
    message, signature, footer = split(token)
    public_key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key_hex))
    public_key.verify(signature, pae([HEADER, message, footer, b""]))
    return json.loads(message)
