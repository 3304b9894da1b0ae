"""Apps here keep their development key under the test's own temporary var dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi import FastAPI

# RFC 8032 section 7.1, test 1: a known Ed25519 key pair.
RFC8032_SEED_HEX = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC8032_PUBLIC_HEX = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


@pytest.fixture
def var_dir(tmp_path: Path) -> Path:
    return tmp_path / "var"


@pytest.fixture
def app(make_app: Callable[..., FastAPI], var_dir: Path) -> FastAPI:
    return make_app(var_dir=str(var_dir))
