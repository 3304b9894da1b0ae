"""A deployment taking x402 payments on base-sepolia (USDC there signs as "USDC", version
"2"), settled through a local facilitator that checks signatures for real."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from x402.mechanisms.evm.default_assets import DEFAULT_ASSETS

from agent_broker.accounts.models import Account
from agent_broker.payments.models import X402Payment
from tests.x402.facilitator import LocalFacilitator, local_facilitator
from tests.x402.wallet import Wallet, decode_header, pay_v1, pay_v2

PAY_TO = "0x" + "5a" * 20
NETWORK = "base-sepolia"
CAIP2 = "eip155:84532"
USDC = DEFAULT_ASSETS[CAIP2][0]
BASE = "https://broker.test"  # the tests' BROKER_PUBLIC_BASE_URL


@pytest.fixture
def facilitator() -> Iterator[LocalFacilitator]:
    with local_facilitator() as running:
        yield running


@pytest.fixture
def x402_settings(facilitator: LocalFacilitator) -> dict[str, Any]:
    return {
        "x402_enabled": True,
        "x402_facilitator_url": facilitator.url,
        "x402_pay_to": PAY_TO,
        "x402_network": NETWORK,
    }


@pytest.fixture
def app(make_app: Callable[..., FastAPI], x402_settings: dict[str, Any]) -> FastAPI:
    return make_app(**x402_settings)


def challenge_of(client: TestClient | httpx.Client, method: str, path: str) -> httpx.Response:
    """The 402 a payable call with no credential answers."""
    response = client.request(method, path, json={} if method == "POST" else None)
    assert response.status_code == 402, response.text
    return response


def v1_payment(client: TestClient, wallet: Wallet, path: str = "/v1/feed", tier: int = 0) -> str:
    """X-PAYMENT for offer `tier` of the challenge of GET `path`, from x402's client."""
    return pay_v1(wallet, challenge_of(client, "GET", path).json()["accepts"][tier])


def v2_payment(client: TestClient, wallet: Wallet, path: str = "/v1/feed", tier: int = 0) -> str:
    """PAYMENT-SIGNATURE for offer `tier` of the challenge of GET `path`."""
    response = challenge_of(client, "GET", path)
    return pay_v2(wallet, response.headers["PAYMENT-REQUIRED"], tier)


def receipt(response: httpx.Response) -> dict[str, Any]:
    """The settlement receipt, the same in both headers."""
    v1, v2 = response.headers["X-PAYMENT-RESPONSE"], response.headers["PAYMENT-RESPONSE"]
    assert v1 == v2
    return decode_header(v2)


def count_accounts(app: FastAPI) -> int:
    with app.state.db.reader() as session:
        return session.scalar(select(func.count()).select_from(Account)) or 0


def x402_rows(app: FastAPI) -> list[Any]:
    with app.state.db.reader() as session:
        return list(session.execute(select(X402Payment.__table__)).all())
