"""The page a processor_b invoice's payer is sent to: amount, chain, deposit address and
the address as a QR code (segno, SVG inline, no script). A stub invoice's page says it
cannot be paid."""

from __future__ import annotations

from html import escape
from typing import Any

import segno
from sqlalchemy.orm import Session

from agent_broker.payments import repository
from agent_broker.pricing import PACK_CREDITS, usd
from agent_broker.problems import NotFound

CHAIN_NAMES = {
    "usdttrc20": "USDT on Tron (TRC-20)",
    "usdterc20": "USDT on Ethereum (ERC-20)",
    "usdc": "USDC on Ethereum",
    "usdcsol": "USDC on Solana",
    "usdtpolygon": "USDT on Polygon",
    "usdcpolygon": "USDC on Polygon",
    "usdcbase": "USDC on Base",
}


def render(session: Session, address: str) -> str:
    invoice = repository.payable_invoice(session, address)
    if invoice is None:
        raise NotFound("No invoice is paid at this address.")
    return _page(address, invoice)


def _page(address: str, invoice: Any) -> str:
    amount = f"{usd(invoice.amount_micro)} USD"
    chain = CHAIN_NAMES.get(invoice.chain or "", "a stablecoin")
    if invoice.processor == "stub":
        body = (
            "<p class=stub>This is a test invoice from a deployment with no payment "
            "processor configured. It cannot be paid and will never add credits.</p>"
        )
    else:
        qr = segno.make(address, error="m").svg_inline(scale=5, title="Deposit address")
        status = "Paid: thank you." if invoice.status == "paid" else "Waiting for payment."
        body = (
            f"<p>Send <strong>{escape(amount)}</strong> in <strong>{escape(chain)}</strong>"
            f" to this address:</p><p><code>{escape(address)}</code></p>{qr}"
            "<p>Credits are added once the payment is confirmed on chain. Send only "
            f"{escape(chain)}; other coins or networks are lost.</p>"
            f"<p class=status>{escape(status)}</p>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>Pay {escape(amount)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;"
        "padding:0 1rem}code{word-break:break-all}</style></head><body>"
        f"<h1>{invoice.pack_count * PACK_CREDITS:,} credits</h1>{body}</body></html>"
    )
