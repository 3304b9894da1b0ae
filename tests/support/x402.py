"""A deployment taking x402 payments on base-sepolia (USDC there signs as "USDC", version
"2"), settled through the local facilitator of tests/support/x402_facilitator.py: the
settings, the challenges a payable call answers, and what a payment leaves behind."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from x402.mechanisms.evm.default_assets import DEFAULT_ASSETS

from agent_broker.accounts.models import Account
from agent_broker.payments.models import X402Payment
from tests.support.x402_wallet import Wallet, decode_header, pay_v1, pay_v2

PAY_TO = "0x" + "5a" * 20
NETWORK = "base-sepolia"
CAIP2 = "eip155:84532"
USDC = DEFAULT_ASSETS[CAIP2][0]

# The operations a credit-less caller may pay for per call (x402), as the auth policy
# marks them metered.
PAYABLE_OPERATIONS = {
    ("POST", "/v1/listings"),
    ("GET", "/v1/feed"),
    ("GET", "/v1/listings/{listing_id}"),
    ("POST", "/v1/listings/{listing_id}/threads"),
    ("GET", "/v1/listings/{listing_id}/threads"),
    ("GET", "/v1/threads/{thread_id}"),
    ("POST", "/v1/threads/{thread_id}/offers"),
    ("POST", "/v1/threads/{thread_id}/close"),
    ("POST", "/v1/threads/{thread_id}/finalize"),
    ("GET", "/v1/deals/{deal_id}"),
    ("POST", "/v1/deals/{deal_id}/ratings"),
    ("POST", "/v1/deals/{deal_id}/dispute"),
}


def x402_settings_for(facilitator_url: str) -> dict[str, Any]:
    return {
        "x402_enabled": True,
        "x402_facilitator_url": facilitator_url,
        "x402_pay_to": PAY_TO,
        "x402_network": NETWORK,
    }


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


def new_account_key(paid: httpx.Response) -> dict[str, str]:
    """The credential headers of the account a first payment opened."""
    return {"x-api-key": paid.json()["new_account"]["api_key"]}


def count_accounts(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return session.scalar(select(func.count()).select_from(Account)) or 0


def x402_rows(app: FastAPI) -> list[Any]:
    with app.state.context.db.reader() as session:
        return list(session.execute(select(X402Payment.__table__)).all())
