"""Dashboard apps trust the test identity provider (tests/support/identity.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi import FastAPI

from tests.support.identity import idp_settings


@pytest.fixture
def app(make_app: Callable[..., FastAPI], jwks_path: Path) -> FastAPI:
    return make_app(**idp_settings(f"file://{jwks_path}"))
