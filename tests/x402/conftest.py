"""Apps here take x402 payments, settled through the local facilitator
(tests/support/fixtures/x402.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI


@pytest.fixture
def app(make_app: Callable[..., FastAPI], x402_settings: dict[str, Any]) -> FastAPI:
    return make_app(**x402_settings)
