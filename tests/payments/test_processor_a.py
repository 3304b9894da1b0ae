"""processor_a's callback, end to end (docs/interface.md §17.2): an invoice is bought through
POST /dashboard/credits, the fake processor_a made its charge, and the callback is
delivered as processor_a would sign it (HMAC-SHA256 hex of the raw body). Only a verified
`paid` callback credits, the invoice's whole amount as real money, once; every refusal
credits nothing and logs one line that carries no body, signature or secret."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from agent_broker.ledger import books
from agent_broker.ledger.models import JournalEntry
from agent_broker.logging import json_formatter
from agent_broker.payments.models import Invoice
from tests.support.accounts import Agent, balance, fund, funded, register
from tests.support.http import assert_problem, new_key
from tests.support.market import FEE, LISTING
from tests.support.payments import (
    SOURCE,
    WEBHOOK_SECRET,
    assert_nothing_credited,
    bought,
    callback_refusals,
    journal_payments,
    processor_events,
)
from tests.support.processors import processor_a_callback

API_KEY = "processor-a-api-key"  # the fixture settings' processor_a_api_key
PACK_MICRO = 500_000


# --- helpers ---------------------------------------------------------------------------


def charge(client: TestClient, agent: Agent, packs: int = 1) -> tuple[str, str]:
    """A processor_a invoice of `packs`: (charge id, invoice id)."""
    charge_id = bought(client, agent, pack_count=packs, processor="processor_a")["processor_id"]
    return charge_id, invoice_of(client.app, charge_id).id


def invoice_of(app: FastAPI, processor_id: str) -> Invoice:
    with app.state.context.db.reader() as session:
        row = session.scalars(select(Invoice).where(Invoice.processor_id == processor_id)).one()
        session.expunge(row)
    return row


def deliver(client: TestClient, body: bytes, headers: dict[str, str]):
    return client.post("/webhooks/processor-a", content=body, headers=headers)


def paid(client: TestClient, charge_id: str, **extra: str):
    return deliver(client, *processor_a_callback(WEBHOOK_SECRET, charge_id, **extra))


def signed(body: bytes, secret: str = WEBHOOK_SECRET, **headers: str) -> dict[str, str]:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Webhook-Signature": signature, **headers}


def payments(app: FastAPI) -> list[dict[str, Any]]:
    return journal_payments(app, "processor_a")


def journal_size(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return int(session.scalar(select(func.count()).select_from(JournalEntry)))


def rendered_logs(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured record as the service writes it (one JSON line each)."""
    formatter = json_formatter()
    return "\n".join(formatter.format(record) for record in caplog.records)


# --- a paid charge ---------------------------------------------------------------------


def test_a_paid_charge_credits_the_invoice_as_real_money(app, client, processors):
    agent, bystander = register(client), register(client)
    charge_id, invoice_id = charge(client, agent, packs=3)
    assert balance(client, agent) == 0 and funded(client, agent) is False

    response = paid(client, charge_id)
    assert response.status_code == 200, response.text
    assert response.json() == {"received": True, "credited_micro": 1_500_000}

    assert balance(client, agent) == 1_500_000
    assert funded(client, agent) is True
    assert balance(client, bystander) == 0 and funded(client, bystander) is False
    (entry,) = payments(app)
    assert entry["reference"] == invoice_id
    assert entry["real_money"] is True
    assert entry["postings"] == sorted(
        [(books.wallet_code(agent.account_id), 1_500_000), (books.PROCESSOR_A, -1_500_000)]
    )
    assert invoice_id in entry["memo"] and "3000 credits" in entry["memo"]
    invoice = invoice_of(app, charge_id)
    assert invoice.status == "paid" and invoice.paid_at is not None
    assert processor_events(app) == [("processor_a", f"{charge_id}:paid", 1_500_000)]


@pytest.mark.parametrize("packs", [1, 10])
def test_the_credit_is_the_whole_invoice_amount(app, client, processors, packs):
    agent = register(client)
    charge_id, _ = charge(client, agent, packs=packs)
    # processor_a's own price fields do not change what the invoice buys.
    response = paid(client, charge_id, price="1", fee="99999")
    assert response.json()["credited_micro"] == packs * PACK_MICRO
    assert balance(client, agent) == packs * PACK_MICRO


def test_the_callback_may_name_its_own_invoice_as_order_id(app, client, processors):
    agent = register(client)
    charge_id, invoice_id = charge(client, agent)
    assert paid(client, charge_id, order_id=invoice_id).status_code == 200
    assert balance(client, agent) == PACK_MICRO


def test_a_json_callback_is_accepted(app, client, processors):
    agent = register(client)
    charge_id, invoice_id = charge(client, agent, packs=2)
    body = json.dumps({"id": charge_id, "status": "paid", "order_id": invoice_id}).encode()
    response = deliver(client, body, signed(body, **{"Content-Type": "application/json"}))
    assert response.status_code == 200, response.text
    assert response.json() == {"received": True, "credited_micro": 1_000_000}
    assert balance(client, agent) == 1_000_000
    assert funded(client, agent) is True


def test_a_json_callback_without_its_content_type_is_read_as_json(app, client, processors):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body = json.dumps({"id": charge_id, "status": "paid"}).encode()
    response = deliver(client, body, signed(body, **{"Content-Type": "text/plain"}))
    assert response.status_code == 200, response.text
    assert balance(client, agent) == PACK_MICRO


def test_payment_lifts_the_listing_cap(app, client, processors):
    agent = register(client)
    fund(app, agent.account_id, 3 * FEE)  # credit, but not real money
    for _ in range(3):
        response = client.post(
            "/v1/listings", json=LISTING, headers={**agent.headers, "Idempotency-Key": new_key()}
        )
        assert response.status_code == 201, response.text
    fourth = {**agent.headers, "Idempotency-Key": new_key()}
    assert_problem(
        client.post("/v1/listings", json=LISTING, headers=fourth), 409, "listing_cap_reached"
    )
    charge_id, _ = charge(client, agent)
    assert paid(client, charge_id).status_code == 200
    assert funded(client, agent) is True
    response = client.post("/v1/listings", json=LISTING, headers=fourth)
    assert response.status_code == 201, response.text
    assert balance(client, agent) == PACK_MICRO - FEE


def test_two_invoices_are_two_payments(app, client, processors):
    agent = register(client)
    first, first_invoice = charge(client, agent, packs=1)
    second, second_invoice = charge(client, agent, packs=2)
    assert paid(client, second).json()["credited_micro"] == 1_000_000
    assert paid(client, first).json()["credited_micro"] == PACK_MICRO
    assert balance(client, agent) == 1_500_000
    assert [e["reference"] for e in payments(app)] == [second_invoice, first_invoice]


# --- redelivery ------------------------------------------------------------------------


def test_a_redelivered_paid_callback_is_409_and_credits_nothing_more(
    app, client, processors, caplog
):
    agent = register(client)
    charge_id, invoice_id = charge(client, agent, packs=2)
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    assert deliver(client, body, headers).status_code == 200
    entries = journal_size(app)
    caplog.clear()
    for _ in range(3):
        problem = assert_problem(deliver(client, body, headers), 409, "invoice_already_consumed")
        assert "nothing more" in problem["detail"]
    # A differently-encoded delivery of the same charge is the same event.
    again = json.dumps({"id": charge_id, "status": "paid"}).encode()
    assert_problem(
        deliver(client, again, signed(again, **{"Content-Type": "application/json"})),
        409,
        "invoice_already_consumed",
    )
    assert balance(client, agent) == 1_000_000
    assert journal_size(app) == entries
    assert len(payments(app)) == 1
    assert len(processor_events(app)) == 1
    assert [r["invoice"] for r in callback_refusals(caplog)] == [invoice_id] * 4


def test_a_later_status_after_payment_changes_nothing(app, client, processors):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    assert paid(client, charge_id).status_code == 200
    response = paid(client, charge_id, status="expired")
    assert response.status_code == 200
    assert response.json() == {"received": True, "credited_micro": 0}
    assert balance(client, agent) == PACK_MICRO
    assert invoice_of(app, charge_id).status == "paid"


# --- statuses other than paid ----------------------------------------------------------


@pytest.mark.parametrize(
    "status", ["unpaid", "processing", "underpaid", "expired", "refunded", "PAID", "paid "]
)
def test_a_status_other_than_paid_credits_nothing(app, client, processors, status):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    response = paid(client, charge_id, status=status)
    assert response.status_code == 200, response.text
    assert response.json() == {"received": True, "credited_micro": 0}
    assert_nothing_credited(app, client, agent, "processor_a")
    assert invoice_of(app, charge_id).status == "open"
    # It is not the payment: the paid callback that follows still credits.
    assert paid(client, charge_id).json()["credited_micro"] == PACK_MICRO
    assert balance(client, agent) == PACK_MICRO


# --- signatures ------------------------------------------------------------------------


def test_a_missing_signature_is_401_and_credits_nothing(app, client, processors):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    del headers["X-Webhook-Signature"]
    assert_problem(deliver(client, body, headers), 401, "unauthorized")
    assert_problem(
        deliver(client, body, {**headers, "X-Webhook-Signature": ""}), 401, "unauthorized"
    )
    assert_nothing_credited(app, client, agent, "processor_a")


def _bad_signatures(body: bytes) -> dict[str, str]:
    good = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256)
    return {
        "other secret": hmac.new(b"another-secret", body, hashlib.sha256).hexdigest(),
        "one digit off": good.hexdigest()[:-1] + ("0" if good.hexdigest()[-1] != "0" else "1"),
        "truncated": good.hexdigest()[:32],
        "extended": good.hexdigest() + "00",
        "sha1": hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha1).hexdigest(),
        "base64 of the digest": base64.b64encode(good.digest()).decode(),
        "the secret itself": WEBHOOK_SECRET,
        "plain sha256 of the body": hashlib.sha256(body).hexdigest(),
        "garbage": "not-a-signature",
    }


@pytest.mark.parametrize(
    "kind",
    [
        "other secret",
        "one digit off",
        "truncated",
        "extended",
        "sha1",
        "base64 of the digest",
        "the secret itself",
        "plain sha256 of the body",
        "garbage",
    ],
)
def test_a_bad_signature_is_401_and_credits_nothing(app, client, processors, kind):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    headers["X-Webhook-Signature"] = _bad_signatures(body)[kind]
    problem = assert_problem(deliver(client, body, headers), 401, "unauthorized")
    assert "signature" in problem["detail"]
    assert_nothing_credited(app, client, agent, "processor_a")
    assert invoice_of(app, charge_id).status == "open"


def test_a_signature_covers_the_raw_body(app, client, processors):
    """A signature of one body does not carry another: the one of an `unpaid` callback on
    a `paid` body, or a body re-encoded after signing."""
    agent = register(client)
    charge_id, _ = charge(client, agent)
    _, unpaid_headers = processor_a_callback(WEBHOOK_SECRET, charge_id, status="unpaid")
    paid_body, _ = processor_a_callback(WEBHOOK_SECRET, charge_id)
    assert_problem(deliver(client, paid_body, unpaid_headers), 401, "unauthorized")
    document = {"id": charge_id, "status": "paid"}
    signature = signed(json.dumps(document).encode())
    reencoded = json.dumps(document, indent=2).encode()
    assert_problem(
        deliver(client, reencoded, {**signature, "Content-Type": "application/json"}),
        401,
        "unauthorized",
    )
    padded = paid_body + b"&status=paid"
    assert_problem(
        deliver(client, padded, processor_a_callback(WEBHOOK_SECRET, charge_id)[1]),
        401,
        "unauthorized",
    )
    assert_nothing_credited(app, client, agent, "processor_a")


def test_the_signature_is_compared_in_constant_time(app, client, processors, monkeypatch):
    import agent_broker.payments.callbacks as callbacks

    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a, b):  # type: ignore[no-untyped-def]
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(callbacks.hmac, "compare_digest", spy)
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id)
    bad = {**headers, "X-Webhook-Signature": "0" * 64}
    assert deliver(client, body, bad).status_code == 401
    assert deliver(client, body, headers).status_code == 200
    expected = headers["X-Webhook-Signature"].encode()
    assert (expected, b"0" * 64) in compared
    assert (expected, expected) in compared


def test_with_no_webhook_secret_configured_nothing_verifies(make_payments_app, processors):
    app = make_payments_app(processor_a_webhook_secret="")
    with TestClient(app, client=SOURCE, raise_server_exceptions=False) as client:
        agent = register(client)
        # The invoice is a stub (processor_a is not configured without its secret); a
        # callback signed under the empty secret still does not verify.
        body = urlencode({"id": "ch_anything", "status": "paid"}).encode()
        assert_problem(deliver(client, body, signed(body, secret="")), 401, "unauthorized")
        assert balance(client, agent) == 0


def test_a_callback_signed_for_another_deployment_is_refused(make_payments_app, processors):
    """Two deployments sharing processor_a's API: one's secret does not verify at the
    other, so a charge cannot be credited at the wrong broker."""
    app = make_payments_app(processor_a_webhook_secret="whsec-other-deployment-000000")
    with TestClient(app, client=SOURCE, raise_server_exceptions=False) as client:
        agent = register(client)
        charge_id, _ = charge(client, agent)
        assert_problem(paid(client, charge_id), 401, "unauthorized")
        assert balance(client, agent) == 0


# --- the charge and the invoice --------------------------------------------------------


def test_an_unknown_charge_is_404(app, client, processors):
    agent = register(client)
    charge(client, agent)
    problem = assert_problem(paid(client, "ch_unknown0000"), 404, "not_found")
    assert "charge" in problem["detail"]
    assert_nothing_credited(app, client, agent, "processor_a")


def test_a_processor_b_address_is_not_a_charge(app, client, processors):
    agent = register(client)
    response = client.post(
        "/dashboard/credits",
        json={"pack_count": 1, "processor": "processor_b"},
        headers=agent.headers,
    )
    address = response.json()["processor_id"]
    assert_problem(paid(client, address), 404, "not_found")
    assert_nothing_credited(app, client, agent, "processor_a")


def test_an_order_id_naming_another_invoice_is_409(app, client, processors):
    agent, other = register(client), register(client)
    charge_id, _ = charge(client, agent, packs=1)
    _, other_invoice = charge(client, other, packs=10)
    problem = assert_problem(
        paid(client, charge_id, order_id=other_invoice), 409, "invoice_conflict"
    )
    assert "order_id" in problem["detail"]
    assert_problem(
        paid(client, charge_id, order_id="00000000-0000-4000-8000-000000000000"),
        409,
        "invoice_conflict",
    )
    assert_nothing_credited(app, client, agent, "processor_a")
    assert balance(client, other) == 0
    # The charge's own callback still credits its own invoice.
    assert paid(client, charge_id).json()["credited_micro"] == PACK_MICRO


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "paid"},
        {"id": "", "status": "paid"},
        {"id": "{charge}"},
        {"id": "{charge}", "status": ""},
        {},
    ],
)
def test_a_callback_without_id_or_status_is_400(app, client, processors, fields):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body = urlencode({k: v.format(charge=charge_id) for k, v in fields.items()}).encode()
    problem = assert_problem(
        deliver(
            client, body, signed(body, **{"Content-Type": "application/x-www-form-urlencoded"})
        ),
        400,
        "invalid_input",
    )
    assert "charge id or status" in problem["detail"]
    assert_nothing_credited(app, client, agent, "processor_a")


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"[1, 2]", "application/json"),
        (b'"paid"', "application/json"),
        (b"{not json", "application/json"),
        (b"id=\xff\xfe&status=paid", "application/x-www-form-urlencoded"),
    ],
)
def test_a_body_that_is_neither_form_nor_object_is_400(app, client, processors, body, content_type):
    agent = register(client)
    charge(client, agent)
    assert_problem(
        deliver(client, body, signed(body, **{"Content-Type": content_type})),
        400,
        "invalid_input",
    )
    assert_nothing_credited(app, client, agent, "processor_a")


def test_a_json_null_status_is_missing(app, client, processors):
    agent = register(client)
    charge_id, _ = charge(client, agent)
    body = json.dumps({"id": charge_id, "status": None}).encode()
    assert_problem(
        deliver(client, body, signed(body, **{"Content-Type": "application/json"})),
        400,
        "invalid_input",
    )
    assert_nothing_credited(app, client, agent, "processor_a")


# --- what refusals log -----------------------------------------------------------------


def test_every_refusal_logs_one_line_without_body_signature_or_secret(
    app, client, processors, caplog
):
    caplog.set_level(logging.INFO)
    agent, other = register(client), register(client)
    charge_id, invoice_id = charge(client, agent)
    _, other_invoice = charge(client, other)
    marker = "marker-in-the-body-7f3a9c"
    body, headers = processor_a_callback(WEBHOOK_SECRET, charge_id, description=marker)
    signature = headers["X-Webhook-Signature"]
    bad_signature = "ab" * 32
    caplog.clear()

    cases = [
        (deliver(client, body, {**headers, "X-Webhook-Signature": bad_signature}), 401),
        (deliver(client, body, {"Content-Type": headers["Content-Type"]}), 401),
        (
            deliver(client, *processor_a_callback(WEBHOOK_SECRET, "", description=marker)),
            400,
        ),
        (
            deliver(client, *processor_a_callback(WEBHOOK_SECRET, "ch_nope", description=marker)),
            404,
        ),
        (
            deliver(
                client,
                *processor_a_callback(
                    WEBHOOK_SECRET, charge_id, order_id=other_invoice, description=marker
                ),
            ),
            409,
        ),
        (deliver(client, body, headers), 200),
        (deliver(client, body, headers), 409),
    ]
    assert [response.status_code for response, _ in cases] == [status for _, status in cases]

    logged = callback_refusals(caplog)
    assert len(logged) == 6  # one per refusal, none for the payment
    assert all(line["processor"] == "processor_a" and line["why"] for line in logged)
    assert all(line["level"] == "warning" for line in logged)
    assert logged[4]["invoice"] == invoice_id and logged[5]["invoice"] == invoice_id
    output = rendered_logs(caplog) + "\n" + caplog.text
    assert "processor_callback_refused" in output
    for secret in (
        WEBHOOK_SECRET,
        signature,
        bad_signature,
        API_KEY,
        marker,
        body.decode(),
        agent.api_key,
    ):
        assert secret not in output, secret


def test_a_body_refusal_is_logged_too(app, client, processors, caplog):
    caplog.set_level(logging.INFO)
    body = b"[1, 2]"
    caplog.clear()
    response = deliver(client, body, signed(body, **{"Content-Type": "application/json"}))
    assert_problem(response, 400, "invalid_input")
    assert len(callback_refusals(caplog)) == 1
