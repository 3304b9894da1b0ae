"""GET /dashboard/pay/{address}: the page processor_b's payer is sent to, public (the
payer has no credential), HTML with the amount, the chain, the deposit address and the
address as an inline SVG QR code, no script; a stub invoice's page says it cannot be
paid; processor_a's charges and unknown addresses are 404. Whatever the processor
answered as an address is escaped."""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_broker import clock
from agent_broker.payments.models import Invoice
from tests.support.accounts import register
from tests.support.http import assert_problem
from tests.support.payments import SOURCE, WEBHOOK_SECRET, bought
from tests.support.processors import processor_a_callback, processor_b_callback
from tests.support.settings import PUBLIC_BASE_URL as BASE

CHAIN_NAMES = {
    "usdttrc20": "USDT on Tron (TRC-20)",
    "usdterc20": "USDT on Ethereum (ERC-20)",
    "usdc": "USDC on Ethereum",
    "usdcsol": "USDC on Solana",
    "usdtpolygon": "USDT on Polygon",
    "usdcpolygon": "USDC on Polygon",
    "usdcbase": "USDC on Base",
}


def page_path(payment_url: str) -> str:
    assert payment_url.startswith(f"{BASE}/dashboard/pay/")
    return payment_url.removeprefix(BASE)


def assert_html(response) -> str:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert html.lower().startswith("<!doctype html>")
    assert "<script" not in html.lower()
    assert "onload=" not in html.lower() and "javascript:" not in html.lower()
    return html


def visible_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_pay_page_shows_amount_chain_address_and_qr(app, client, processors):
    agent = register(client)
    invoice = bought(client, agent, pack_count=3, processor="processor_b", chain="usdcpolygon")
    address = invoice["processor_id"]
    with TestClient(app) as payer:  # no credential: the payer is anyone with the link
        html = assert_html(payer.get(page_path(invoice["payment_url"])))
    assert "1.50 USD" in html
    assert "USDC on Polygon" in html
    assert f"<code>{address}</code>" in html
    assert "3,000 credits" in html
    svg = re.search(r"<svg\b.*?</svg>", html, re.S)
    assert svg is not None, "no inline SVG"
    assert "<path" in svg.group(0) or "<rect" in svg.group(0)
    assert "<img" not in html  # the QR is inline, not fetched
    assert "Waiting for payment." in html
    assert "cannot be paid" not in html


@pytest.mark.parametrize(("chain", "packs"), [("usdttrc20", 20), ("usdterc20", 4), ("usdc", 4)])
def test_the_page_names_the_chain_and_the_raised_amount(app, client, processors, chain, packs):
    agent = register(client)
    invoice = bought(client, agent, pack_count=1, processor="processor_b", chain=chain)
    html = assert_html(client.get(page_path(invoice["payment_url"])))
    assert CHAIN_NAMES[chain] in html
    assert f"{packs * 0.5:.2f} USD" in html
    assert f"{packs * 1000:,} credits" in html


@pytest.mark.parametrize("chain", sorted(CHAIN_NAMES))
def test_every_chain_has_its_name(app, client, processors, chain):
    agent = register(client)
    invoice = bought(client, agent, pack_count=20, processor="processor_b", chain=chain)
    html = assert_html(client.get(page_path(invoice["payment_url"])))
    assert f"<strong>{CHAIN_NAMES[chain]}</strong>" in html


def test_each_address_has_its_own_qr_code(app, client, processors):
    agent = register(client)
    first = bought(client, agent, pack_count=1, processor="processor_b")
    second = bought(client, agent, pack_count=1, processor="processor_b")
    svgs = [
        re.search(r"<svg\b.*?</svg>", client.get(page_path(i["payment_url"])).text, re.S)
        for i in (first, second)
    ]
    assert all(svgs)
    assert svgs[0].group(0) != svgs[1].group(0)  # type: ignore[union-attr]


def test_the_page_says_when_the_invoice_was_paid(app, client, processors):
    agent = register(client)
    invoice = bought(client, agent, pack_count=1, processor="processor_b")
    address = invoice["processor_id"]
    callback = processors.addresses[address]["callback"].removeprefix(BASE)
    response = client.post(callback, data=processor_b_callback(address, "pay-1", "0.5"))
    assert response.text == "*ok*"
    html = assert_html(client.get(page_path(invoice["payment_url"])))
    assert "Paid: thank you." in html
    assert "Waiting for payment." not in html


def test_a_stub_invoice_page_says_it_cannot_be_paid(make_payments_app, processors):
    app = make_payments_app(env="staging")
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        invoice = bought(client, agent, pack_count=2)
        assert invoice["processor_id"].startswith("stub_")
        html = assert_html(client.get(page_path(invoice["payment_url"])))
    assert "cannot be paid" in html
    assert "2,000 credits" in html
    assert "<svg" not in html  # nothing to scan
    assert invoice["processor_id"] not in visible_text(html)


def test_an_unknown_address_is_404(app, client, processors):
    problem = assert_problem(client.get("/dashboard/pay/0x" + "12" * 20), 404, "not_found")
    assert "address" in problem["detail"]
    assert_problem(client.get("/dashboard/pay/stub_" + "0" * 24), 404, "not_found")


def test_a_processor_a_charge_has_no_pay_page(app, client, processors):
    agent = register(client)
    invoice = bought(client, agent, pack_count=1, processor="processor_a")
    charge_id = invoice["processor_id"]
    assert not invoice["payment_url"].startswith(f"{BASE}/dashboard/pay/")
    assert_problem(client.get(f"/dashboard/pay/{charge_id}"), 404, "not_found")
    # Paid or not.
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    assert client.post("/webhooks/processor-a", content=body, headers=headers).status_code == 200
    assert_problem(client.get(f"/dashboard/pay/{charge_id}"), 404, "not_found")


def _insert_invoice(app: FastAPI, account_id: str, processor_id: str, **values: Any) -> None:
    row = {
        "id": str(uuid.uuid4()),
        "account_id": account_id,
        "processor": "processor_b",
        "chain": "usdtpolygon",
        "pack_count": 1,
        "amount_micro": 500_000,
        "processor_id": processor_id,
        "payment_url": f"{BASE}/dashboard/pay/{quote(processor_id, safe='')}",
        "status": "open",
        "created_at": clock.now(),
        **values,
    }
    with app.state.context.db.writer() as session:
        session.add(Invoice(**row))
        session.commit()


@pytest.mark.parametrize(
    "address",
    [
        "<b>bold",
        '0xab"><img src=x onerror=alert(1)>',
        "0x<script>alert(1)",
        "a&b'c",
    ],
)
def test_the_address_is_escaped(app, client, address):
    # Without "/": a path segment cannot carry one (%2F is decoded before routing).
    agent = register(client)
    _insert_invoice(app, agent.account_id, address)
    html = assert_html(client.get("/dashboard/pay/" + quote(address, safe="")))
    assert "<b>" not in html and "<img" not in html  # no markup of the processor's
    assert address not in html
    escaped = address.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = escaped.replace('"', "&quot;").replace("'", "&#x27;")
    assert f"<code>{escaped}</code>" in html
    assert "<svg" in html


def test_an_unknown_chain_in_a_row_is_named_generically(app, client):
    agent = register(client)
    _insert_invoice(app, agent.account_id, "0xfeed", chain=None)
    html = assert_html(client.get("/dashboard/pay/0xfeed"))
    assert "a stablecoin" in html
