"""Webhook receivers are paths of the local HTTPS server (agents.dev) of
tests/support/fixtures/domains.py; the events come from the two-trader `market`."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi import FastAPI


@pytest.fixture
def app(make_domain_app: Callable[..., FastAPI]) -> FastAPI:
    return make_domain_app()
