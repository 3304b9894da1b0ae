"""The Ed25519 signing key: where it comes from, its kid, and the development key file.

Production reads the secret from BROKER_SIGNING_KEY. Elsewhere, without it, a key is
generated once and kept in `{BROKER_VAR_DIR}/signing-key.pem`, so tokens survive restarts.
Nothing here logs or returns the private half, and error messages never echo the secret."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import pyseto
import structlog
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pyseto import KeyInterface

from agent_broker.config import SIGNING_KEY_FORMAT, Settings, parse_signing_key

log = structlog.get_logger("agent_broker.tokens")

KEY_FILE_NAME = "signing-key.pem"
CARD_KEY_FILE_NAME = "card-signing-key.pem"


class SigningKeyError(ValueError):
    """The configured signing key is unusable; the service must not start with it."""


def kid_of(public_key: Ed25519PublicKey) -> str:
    """First 16 hex characters of SHA-256 over the raw 32-byte public key (docs/interface.md
    §14.1)."""
    return hashlib.sha256(raw_public(public_key)).hexdigest()[:16]


def raw_public(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass(frozen=True)
class Signer:
    """The key this process signs with. Built once per app, a part of its context
    (agent_broker.app.build_context)."""

    kid: str
    public_key: Ed25519PublicKey = field(repr=False, compare=False)
    private_key: Ed25519PrivateKey = field(repr=False, compare=False)
    paseto_key: KeyInterface = field(repr=False, compare=False)

    @classmethod
    def from_private_key(cls, private_key: Ed25519PrivateKey) -> Signer:
        public_key = private_key.public_key()
        return cls(
            kid=kid_of(public_key),
            public_key=public_key,
            private_key=private_key,
            paseto_key=pyseto.Key.from_asymmetric_key_params(4, d=_seed(private_key)),
        )

    @property
    def public_key_hex(self) -> str:
        return raw_public(self.public_key).hex()


def generate() -> Signer:
    return Signer.from_private_key(Ed25519PrivateKey.generate())


def secret_hex(signer: Signer) -> str:
    """The 64-hex form BROKER_SIGNING_KEY accepts; only `keys rotate` ever prints it."""
    return _seed(signer.private_key).hex()


def parse_secret(text: str) -> Ed25519PrivateKey:
    """64 hex characters (the raw 32-byte seed) or a PEM PKCS#8 Ed25519 private key: the
    rules Settings checks BROKER_SIGNING_KEY and BROKER_CARD_SIGNING_KEY by."""
    try:
        return parse_signing_key(text)
    except ValueError:
        raise SigningKeyError(f"BROKER_SIGNING_KEY {SIGNING_KEY_FORMAT}") from None


def signer_for(settings: Settings) -> Signer:
    """The signer the settings call for: BROKER_SIGNING_KEY when set, else the development
    key file (created on first use). Raises SigningKeyError when unusable."""
    return _signer(settings, settings.signing_key, "BROKER_SIGNING_KEY", KEY_FILE_NAME)


def card_signer_for(settings: Settings) -> Signer:
    """The agent card's own key (BROKER_CARD_SIGNING_KEY), kept apart from the token key
    so either can be rotated alone; the same formats and development file rule."""
    return _signer(
        settings, settings.card_signing_key, "BROKER_CARD_SIGNING_KEY", CARD_KEY_FILE_NAME
    )


def _signer(settings: Settings, secret: str, name: str, file_name: str) -> Signer:
    if secret:
        try:
            return Signer.from_private_key(parse_secret(secret))
        except SigningKeyError as exc:
            raise SigningKeyError(str(exc).replace("BROKER_SIGNING_KEY", name)) from None
    if settings.env == "production":
        raise SigningKeyError(f"{name} must be set in production")
    return Signer.from_private_key(load_or_create_key_file(Path(settings.var_dir) / file_name))


def key_file(var_dir: str | Path) -> Path:
    return Path(var_dir) / KEY_FILE_NAME


def load_or_create_key_file(path: Path) -> Ed25519PrivateKey:
    """Read the key file, creating it first if missing. Several workers may race here: each
    writes a private temporary file and hard-links it into place, which fails for all but
    the first, so every process ends up with the same key."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _write_private(path, Ed25519PrivateKey.generate())
        try:
            os.link(tmp, path)
            log.info("signing key generated", path=str(path))
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return _read_key_file(path)


def rotate_key_file(path: Path) -> tuple[Signer | None, Signer]:
    """Replace the key file with a new key; the old one is kept beside it as
    `signing-key.<kid>.retired.pem`. The path never goes missing, so a process starting
    meanwhile cannot create a third key."""
    old = Signer.from_private_key(_read_key_file(path)) if path.exists() else None
    new_key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_private(path, new_key)
    try:
        if old is not None:
            retired = path.with_name(f"signing-key.{old.kid}.retired.pem")
            if not retired.exists():
                os.link(path, retired)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return old, Signer.from_private_key(new_key)


def _seed(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )


def _write_private(beside: Path, key: Ed25519PrivateKey) -> Path:
    """Write `key` as PEM to a new 0600 file next to `beside` and return its path."""
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    tmp = beside.with_name(f".{beside.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


def _read_key_file(path: Path) -> Ed25519PrivateKey:
    if path.stat().st_mode & 0o077:
        log.warning("signing key file is readable by others; chmod 600 it", path=str(path))
    try:
        return parse_secret(path.read_text())
    except SigningKeyError:
        raise SigningKeyError(
            f"{path} does not hold an Ed25519 private key; remove it to generate a new one"
        ) from None
