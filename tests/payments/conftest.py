"""Both processors configured against local fakes of their APIs; callbacks are delivered
by the tests as the processors would, processor_b's from 127.0.0.1 (its source list)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.support.payments import SOURCE


@pytest.fixture
def app(make_payments_app: Callable[..., FastAPI]) -> FastAPI:
    return make_payments_app()


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False, client=SOURCE) as test_client:
        yield test_client
