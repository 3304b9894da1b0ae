"""Apps here reach the local HTTPS server of tests/support/fixtures/domains.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi import FastAPI


@pytest.fixture
def app(make_domain_app: Callable[..., FastAPI]) -> FastAPI:
    return make_domain_app()
