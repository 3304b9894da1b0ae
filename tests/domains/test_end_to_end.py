"""A new account, from registration, can prove a domain served by a local HTTPS server,
receive the grant, post a listing and open a thread with nothing but HTTP calls."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker.ledger.models import JournalEntry
from tests.support.accounts import read_account
from tests.support.domains import GRANT, serve_token
from tests.support.http import new_key
from tests.support.market import DEAL_FEE, FEE, LISTING
from tests.support.tls import TLSServer


def _onboard(
    client: TestClient, server: TLSServer, name: str, route: str, domain: str
) -> dict[str, str]:
    """Register, complete the profile, prove the route's domain: the agent's headers."""
    made = client.post("/v1/account/register", json={"accepted_terms": True})
    assert made.status_code == 201, made.text
    headers = {"x-api-key": made.json()["api_key"]}

    contact = client.put(
        "/v1/account/contact",
        headers=headers,
        json={"contact_name": name, "contact_email": f"ops@{domain}"},
    )
    assert contact.status_code == 204, contact.text
    routed = client.put("/v1/account/route", headers=headers, json={"deal_route": route})
    assert routed.status_code == 204, routed.text
    profile = client.get("/v1/account/profile", headers=headers)
    assert profile.status_code == 200, profile.text
    assert profile.json()["missing"] == [], profile.json()

    state = client.get("/v1/account/domain", headers=headers)
    assert state.status_code == 200, state.text
    state = state.json()
    assert state["domain"] == domain
    assert state["url"] == f"https://{domain}/.well-known/svc-challenge.txt"
    assert (state["verified"], state["grant_pending"], state["grant_micro"]) == (
        False,
        False,
        GRANT,
    )
    serve_token(server, state["token"], suffix=b"\n")  # as `echo token > file` writes it

    proved = client.post("/v1/account/domain/verify", headers=headers)
    assert proved.status_code == 200, proved.text
    assert proved.json()["domain"] == domain
    assert (proved.json()["verified"], proved.json()["granted"]) == (True, True)
    assert proved.json()["granted_micro"] == GRANT
    assert "grant_reason" not in proved.json()

    after = client.get("/v1/account/domain", headers=headers).json()
    assert (after["verified"], after["grant_pending"]) == (True, False)
    account = read_account(client, headers)
    assert (account["balance_micro"], account["held_micro"]) == (GRANT, 0)
    return headers


def test_from_registration_to_a_thread_on_the_grant_alone(app, client, challenge_server):
    seller = _onboard(
        client, challenge_server, "Seller Ops", "https://agents.dev/deals/", "agents.dev"
    )
    buyer = _onboard(
        client, challenge_server, "Buyer Ops", "https://api.buyer.dev/a2a/", "buyer.dev"
    )
    assert [seen.host for seen in challenge_server.seen] == ["agents.dev", "buyer.dev"]

    listing = client.post(
        "/v1/listings", json=LISTING, headers={**seller, "Idempotency-Key": new_key()}
    )
    assert listing.status_code == 201, listing.text
    assert listing.json()["listing_type"] == "sell"
    listing_id = listing.json()["id"]

    thread = client.post(
        f"/v1/listings/{listing_id}/threads",
        json={"diff": "I can do it in 2 days for $2.50"},
        headers={**buyer, "Idempotency-Key": new_key()},
    )
    assert thread.status_code == 201, thread.text
    assert thread.json()["listing_id"] == listing_id
    assert thread.json()["status"] == "open"
    assert thread.json()["amount_micro"] == DEAL_FEE

    seller_account = read_account(client, seller)
    buyer_account = read_account(client, buyer)
    assert (seller_account["balance_micro"], seller_account["held_micro"]) == (
        GRANT - FEE,
        0,
    )
    # balance_micro is what is spendable: the deal fee is held, not yet spent.
    assert (buyer_account["balance_micro"], buyer_account["held_micro"]) == (
        GRANT - DEAL_FEE,
        DEAL_FEE,
    )
    # A welcome grant is not real money: neither account counts as funded.
    for account in (seller_account, buyer_account):
        assert account["reputation"]["domain_verified"] is True
        assert account["reputation"]["funded"] is False
    with app.state.context.db.reader() as session:
        grants = session.scalars(
            select(JournalEntry.real_money).where(JournalEntry.kind == "domain_grant")
        ).all()
    assert grants == [False, False]
