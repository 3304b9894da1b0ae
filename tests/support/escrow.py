"""Escrow deals as tests drive them: an escrow listing between a seller and a buyer (and
maybe an evaluator), its thread sealed at a price, and the deal's escrow steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from agent_broker.ledger.audit import audit
from tests.support.accounts import Agent, handle_of, register
from tests.support.http import new_key
from tests.support.market import DEAL_FEE, FEE, finalize, listed, trader

PRICE = 2_500_000


@dataclass
class EscrowMarket:
    poster: Agent
    opener: Agent
    listing_id: str
    evaluator: Agent | None

    @property
    def seller(self) -> Agent:
        return self.poster if self.listing_type == "sell" else self.opener

    @property
    def buyer(self) -> Agent:
        return self.opener if self.listing_type == "sell" else self.poster

    listing_type: str = "sell"


def escrow_market(
    app: FastAPI,
    client: TestClient,
    *,
    listing_type: str = "sell",
    price: int = PRICE,
    with_evaluator: bool = True,
    buyer_funds: int | None = None,
    **fields: Any,
) -> EscrowMarket:
    """An escrow listing of the poster's; the buyer holds `buyer_funds` (enough for the
    price and a deal fee unless told)."""
    funds = buyer_funds if buyer_funds is not None else price
    poster_funds = FEE + DEAL_FEE + (funds if listing_type == "buy" else 0)
    opener_funds = DEAL_FEE + (funds if listing_type == "sell" else 0)
    poster = trader(app, client, amount=poster_funds)
    opener = trader(app, client, amount=opener_funds)
    evaluator = register(client) if with_evaluator else None
    if evaluator is not None:
        fields.setdefault("evaluator", handle_of(client, evaluator))
    listing_id = listed(
        client,
        poster,
        listing_type=listing_type,
        price_micro=price,
        settlement="escrow",
        **fields,
    )
    return EscrowMarket(poster, opener, listing_id, evaluator, listing_type)


def open_priced(client: TestClient, agent: Agent, listing_id: str, **body: Any):  # type: ignore[no-untyped-def]
    return client.post(
        f"/v1/listings/{listing_id}/threads",
        json={"diff": "Terms as listed", **body},
        headers={**agent.headers, "Idempotency-Key": new_key()},
    )


def priced_offer(client: TestClient, agent: Agent, thread_id: str, price: int | None):  # type: ignore[no-untyped-def]
    body: dict[str, Any] = {"diff": "New terms"}
    if price is not None:
        body["price_micro"] = price
    return client.post(f"/v1/threads/{thread_id}/offers", json=body, headers=agent.headers)


def sealed(client: TestClient, market: EscrowMarket) -> dict:
    """Open a thread on the listing at its price and seal it: the poster's deal package."""
    thread = open_priced(client, market.opener, market.listing_id)
    assert thread.status_code == 201, thread.text
    deal = finalize(client, market.poster, thread.json()["id"])
    assert deal.status_code == 201, deal.text
    return deal.json()


def step(client, agent: Agent, deal_id: str, name: str, key: str | None = None, **body: Any):  # type: ignore[no-untyped-def]
    """POST /v1/deals/{id}/{name} (delivery, acceptance, rejection, ruling)."""
    return client.post(
        f"/v1/deals/{deal_id}/{name}",
        json=body,
        headers={**agent.headers, "Idempotency-Key": key or new_key()},
    )


def rejected(client: TestClient, market: EscrowMarket, reason: str) -> str:
    """Seal a deal on the listing, deliver it and reject the delivery: the deal's id."""
    deal = sealed(client, market)["id"]
    assert step(client, market.seller, deal, "delivery").status_code == 200
    refusal = step(client, market.buyer, deal, "rejection", reason=reason)
    assert refusal.status_code == 200, refusal.text
    return deal


def ledger_problems(app: FastAPI) -> list[tuple[str, str]]:
    """What `agent-broker ledger check` would report now: (kind, detail) per problem."""
    found = audit(app.state.context.db.engine, reveal_ids=True).found
    return [(problem.kind, problem.detail) for problem in found.problems]
