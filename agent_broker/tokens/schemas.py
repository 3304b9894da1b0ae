from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class PublishedKey(BaseModel):
    kid: str = Field(description="First 16 hex characters of SHA-256 over the raw public key")
    purpose: Literal["public"]
    version: Literal["v4"]
    public_key_hex: str = Field(description="Raw 32-byte Ed25519 public key, hex")
    current: bool = Field(description="True for the key new tokens are signed with")


class KeyDocument(BaseModel):
    keys: list[PublishedKey]
    algorithm: Literal["Ed25519"]
    token_ttl_seconds: int
    usage: str
