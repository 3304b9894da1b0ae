"""Money in, end to end over HTTP: an agent registers, its operator links an identity-provider
session (a test issuer whose RSA key is served from a local JWKS file), buys credits
through each processor (local fakes of their APIs), the processors call back, the balance
and the funded flag move, and the operator rotates and disables the key through the
session alone."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from sqlalchemy import select

from agent_broker.ledger.models import JournalEntry
from tests.support.accounts import complete_profile, register
from tests.support.http import assert_problem
from tests.support.identity import bearer, idp_settings
from tests.support.market import LISTING
from tests.support.payments import WEBHOOK_SECRET
from tests.support.processors import processor_a_callback, processor_b_callback


@pytest.fixture
def app(make_payments_app, jwks_path):
    return make_payments_app(**idp_settings(f"file://{jwks_path}"))


def test_an_operator_buys_credits_and_manages_keys_through_a_session(
    app,
    client,
    processors,
    session_token,
):
    agent = register(client)
    complete_profile(client, agent)
    session = bearer(session_token("operator-7"))

    # The session alone reaches nothing until one call carries it with the key.
    assert_problem(client.get("/v1/account", headers=session), 401, "unauthorized")
    linked = client.get("/v1/account", headers={**session, **agent.headers})
    assert linked.status_code == 200
    assert client.get("/v1/account", headers=session).json()["account_id"] == agent.account_id

    # processor_a: a Lightning charge, paid, called back with a signed body.
    charge = client.post(
        "/dashboard/credits", headers=session, json={"pack_count": 4, "processor": "processor_a"}
    )
    assert charge.status_code == 201, charge.text
    invoice_a = charge.json()
    assert invoice_a["amount_micro"] == 2_000_000 and invoice_a["credits_to_add"] == 4_000
    sent = processors.charges[invoice_a["processor_id"]]
    assert sent["amount"] == "2.00" and sent["currency"] == "USD"
    body, headers = processor_a_callback(WEBHOOK_SECRET, invoice_a["processor_id"])
    assert client.post("/webhooks/processor-a", content=body, headers=headers).status_code == 200
    account = client.get("/v1/account", headers=session).json()
    assert account["balance_micro"] == 2_000_000
    assert account["reputation"]["funded"] is True

    # processor_b: a deposit address on Polygon, confirmed, called back from its source.
    deposit = client.post(
        "/dashboard/credits", headers=session, json={"pack_count": 2, "processor": "processor_b"}
    ).json()
    assert deposit["payment_url"].endswith(f"/dashboard/pay/{deposit['processor_id']}")
    page = client.get(urlsplit(deposit["payment_url"]).path)
    assert page.status_code == 200 and deposit["processor_id"] in page.text
    callback = processors.addresses[deposit["processor_id"]]["callback"]
    query = dict(parse_qsl(urlsplit(callback).query))
    fields = processor_b_callback(deposit["processor_id"], "pay-1", "1.00", pending=1)
    assert client.post("/webhooks/processor-b", params=query, data=fields).text == "*ok*"
    assert client.get("/v1/account", headers=session).json()["balance_micro"] == 2_000_000
    fields = processor_b_callback(deposit["processor_id"], "pay-1", "1.00")
    assert client.post("/webhooks/processor-b", params=query, data=fields).text == "*ok*"
    assert client.get("/v1/account", headers=session).json()["balance_micro"] == 3_000_000

    # Funded: the listing cap is lifted.
    for n in range(4):
        posted = client.post(
            "/v1/listings", json=LISTING, headers={**agent.headers, "Idempotency-Key": f"p{n}"}
        )
        assert posted.status_code == 201, posted.text

    # Every credit is real money in the journal, naming its invoice.
    with app.state.context.db.reader() as db:
        entries = db.scalars(
            select(JournalEntry).where(JournalEntry.kind.like("processor_%"))
        ).all()
    assert sorted((e.kind, e.real_money) for e in entries) == [
        ("processor_a_payment", True),
        ("processor_b_payment", True),
    ]
    assert all(e.reference and e.reference in e.memo for e in entries)

    # Keys through the session: rotate (the old key fails at once), disable, rotate back.
    rotated = client.post("/dashboard/keys/rotate", headers=session).json()
    assert_problem(client.get("/v1/account", headers=agent.headers), 401, "unauthorized")
    new_key = {"x-api-key": rotated["api_key"]}
    assert client.get("/v1/account", headers=new_key).status_code == 200
    assert client.post("/dashboard/keys", headers=session).json() == {"ok": True}
    assert_problem(client.get("/v1/feed", headers=new_key), 403, "api_key_disabled")
    revived = client.post("/dashboard/keys/rotate", headers=session).json()
    account = client.get("/v1/account", headers={"x-api-key": revived["api_key"]}).json()
    assert account["status"] == "active"
    assert account["balance_micro"] == 3_000_000 - 4 * 100_000
