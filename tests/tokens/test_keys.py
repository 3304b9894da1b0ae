"""The signing key itself: kid, where it comes from, the development key file."""

from __future__ import annotations

import hashlib
import re
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import ValidationError

from agent_broker.config import SIGNING_KEY_FORMAT, Settings
from agent_broker.tokens import keys
from agent_broker.tokens.keys import SigningKeyError, signer_for
from tests.support.paseto import RFC8032_PUBLIC_HEX, RFC8032_SEED_HEX


def _pem(key: object, encryption: serialization.KeySerializationEncryption | None = None) -> str:
    return key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        encryption or serialization.NoEncryption(),
    ).decode()


def _rfc8032_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SEED_HEX))


def test_kid_is_the_first_16_hex_of_sha256_over_the_raw_public_key():
    signer = keys.Signer.from_private_key(_rfc8032_key())
    assert signer.public_key_hex == RFC8032_PUBLIC_HEX
    expected = hashlib.sha256(bytes.fromhex(RFC8032_PUBLIC_HEX)).hexdigest()[:16]
    assert signer.kid == expected == "21fe31dfa154a261"


def test_development_key_file_is_created_once_private_and_reused(tmp_path: Path):
    settings = Settings(var_dir=str(tmp_path / "var"))
    path = tmp_path / "var" / "signing-key.pem"
    assert not path.exists()

    first = signer_for(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    content = path.read_bytes()
    second = signer_for(settings)

    assert second.kid == first.kid
    assert path.read_bytes() == content
    assert [p.name for p in path.parent.iterdir()] == ["signing-key.pem"]  # no leftovers


def test_workers_starting_together_agree_on_one_development_key(tmp_path: Path):
    settings = Settings(var_dir=str(tmp_path / "var"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        kids = set(pool.map(lambda _: signer_for(settings).kid, range(16)))
    assert len(kids) == 1
    assert [p.name for p in (tmp_path / "var").iterdir()] == ["signing-key.pem"]


def test_staging_without_a_configured_key_also_keeps_one_under_var(tmp_path: Path):
    signer_for(Settings(env="staging", var_dir=str(tmp_path)))
    assert (tmp_path / "signing-key.pem").exists()


@pytest.mark.parametrize(
    "secret",
    [
        RFC8032_SEED_HEX,
        RFC8032_SEED_HEX.upper(),
        f"  {RFC8032_SEED_HEX}\n",
        _pem(_rfc8032_key()),
        _pem(_rfc8032_key()).replace("\n", "\\n"),  # PEM pasted into one env line
    ],
    ids=["hex", "upper-hex", "padded-hex", "pem", "pem-escaped-newlines"],
)
def test_configured_signing_key_is_used_and_nothing_is_written(tmp_path: Path, secret: str):
    signer = signer_for(Settings(signing_key=secret, var_dir=str(tmp_path)))
    assert signer.public_key_hex == RFC8032_PUBLIC_HEX
    assert signer.kid == "21fe31dfa154a261"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "secret",
    [
        "hunter2",
        RFC8032_SEED_HEX[:-2],
        RFC8032_SEED_HEX + "00",
        "zz" * 32,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        _pem(ec.generate_private_key(ec.SECP256R1())),
        _pem(_rfc8032_key(), serialization.BestAvailableEncryption(b"password")),
        _rfc8032_key()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode(),
    ],
    ids=["short", "62-hex", "66-hex", "not-hex", "bad-pem", "ec-key", "encrypted", "public"],
)
def test_anything_else_is_refused_without_echoing_it(tmp_path: Path, secret: str):
    # The settings refuse it before anything starts, by the same rules as parse_secret.
    with pytest.raises(ValidationError, match=re.escape(SIGNING_KEY_FORMAT)) as refused:
        Settings(signing_key=secret, var_dir=str(tmp_path))
    assert secret.strip() not in str(refused.value)
    with pytest.raises(SigningKeyError, match="BROKER_SIGNING_KEY must be") as unparsed:
        keys.parse_secret(secret)
    assert secret.strip() not in str(unparsed.value)
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_key_file_is_refused_not_replaced(tmp_path: Path):
    path = tmp_path / "signing-key.pem"
    path.write_text("garbage")
    path.chmod(0o600)
    with pytest.raises(SigningKeyError, match="remove it"):
        signer_for(Settings(var_dir=str(tmp_path)))
    assert path.read_text() == "garbage"


def test_the_signer_never_shows_its_private_key():
    signer = keys.Signer.from_private_key(_rfc8032_key())
    assert RFC8032_SEED_HEX not in repr(signer) and RFC8032_SEED_HEX not in str(signer)
    assert repr(signer) == "Signer(kid='21fe31dfa154a261')"
    assert keys.secret_hex(signer) == RFC8032_SEED_HEX
