"""processor_b's callback, end to end (docs/interface.md §17.2): an invoice is bought through
POST /dashboard/credits, the fake processor_b made its deposit address, and the payment's
callback is posted to the callback URL the broker gave it, as processor_b would. Only
callbacks from its published addresses are believed (the client address, through
trusted proxies only); `pending=1` credits nothing; a confirmed payment credits the whole
packs of what arrived, as real money, once per (address, uuid); every answer processor_b
should take as received is 200 `*ok*`."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from agent_broker.ledger import books
from agent_broker.logging import json_formatter
from agent_broker.payments.models import Invoice
from tests.support.accounts import Agent, balance, funded, register
from tests.support.http import assert_problem
from tests.support.payments import (
    SOURCE,
    WEBHOOK_SECRET,
    assert_nothing_credited,
    bought,
    callback_refusals,
    journal_payments,
    processor_events,
)
from tests.support.processors import FakeProcessors, processor_b_callback
from tests.support.settings import PUBLIC_BASE_URL as BASE

PACK_MICRO = 500_000
OUTSIDER = ("203.0.113.9", 40000)  # not one of processor_b's addresses
PUBLISHED = "198.51.100.7"  # processor_b's address when the broker sits behind a proxy
COINS = {
    "usdttrc20": "trc20_usdt",
    "usdterc20": "erc20_usdt",
    "usdc": "erc20_usdc",
    "usdcsol": "sol_usdc",
    "usdtpolygon": "polygon_usdt",
    "usdcpolygon": "polygon_usdc",
    "usdcbase": "base_usdc",
}


# --- helpers ---------------------------------------------------------------------------


class Deposit:
    """A processor_b invoice: its deposit address, invoice id and callback path."""

    def __init__(self, processors: FakeProcessors, app: FastAPI, address: str) -> None:
        self.address = address
        callback = processors.addresses[address]["callback"]
        assert callback.startswith(f"{BASE}/webhooks/processor-b?invoice=")
        self.callback = callback.removeprefix(BASE)
        with app.state.context.db.reader() as session:
            self.invoice = session.scalars(
                select(Invoice).where(Invoice.processor_id == address)
            ).one()
            session.expunge(self.invoice)
        self.invoice_id = self.invoice.id
        coin = COINS[self.invoice.chain]
        self.coin = coin

    def fields(self, payment: str, value_coin: str, **overrides: Any) -> dict[str, str]:
        fields = processor_b_callback(
            self.address, payment, value_coin, coin=overrides.pop("coin", self.coin)
        )
        fields.update({k: str(v) for k, v in overrides.items()})
        return fields


def new_deposit(
    client: TestClient,
    processors: FakeProcessors,
    agent: Agent,
    packs: int = 1,
    chain: str | None = None,
) -> Deposit:
    body: dict[str, Any] = {"pack_count": packs, "processor": "processor_b"}
    if chain:
        body["chain"] = chain
    return Deposit(processors, client.app, bought(client, agent, **body)["processor_id"])


def deliver(client: TestClient, deposit: Deposit, fields: dict[str, str], **kwargs: Any):
    return client.post(deposit.callback, data=fields, **kwargs)


def assert_ok(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.text
    assert response.text == "*ok*"
    assert response.headers["content-type"].startswith("text/plain")


def payments(app: FastAPI) -> list[dict[str, Any]]:
    return journal_payments(app, "processor_b")


def invoice_status(app: FastAPI, address: str) -> str:
    with app.state.context.db.reader() as session:
        return session.scalar(select(Invoice.status).where(Invoice.processor_id == address))


# --- pending and confirmed -------------------------------------------------------------


def test_a_pending_payment_is_received_and_credits_nothing(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=3)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "1.50", pending=1)))
    assert_nothing_credited(app, client, agent, "processor_b")
    assert invoice_status(app, deposit.address) == "open"
    # The confirmation of the same payment is then credited.
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "1.50")))
    assert balance(client, agent) == 1_500_000


def test_a_confirmed_payment_credits_its_whole_packs_as_real_money(app, client, processors):
    agent, bystander = register(client), register(client)
    deposit = new_deposit(client, processors, agent, packs=3)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "1.70")))
    assert balance(client, agent) == 1_500_000  # 3 packs; the 0.20 remainder is not credited
    assert funded(client, agent) is True
    assert balance(client, bystander) == 0 and funded(client, bystander) is False
    (entry,) = payments(app)
    assert entry["reference"] == deposit.invoice_id
    assert entry["real_money"] is True
    assert entry["postings"] == sorted(
        [(books.wallet_code(agent.account_id), 1_500_000), (books.PROCESSOR_B, -1_500_000)]
    )
    assert deposit.invoice_id in entry["memo"] and "3000 credits" in entry["memo"]
    assert processor_events(app) == [("processor_b", f"{deposit.address}:pay-1", 1_500_000)]
    assert invoice_status(app, deposit.address) == "paid"


@pytest.mark.parametrize(
    ("value_coin", "credited"),
    [
        ("0.5", 500_000),
        ("0.50", 500_000),
        ("0.999999", 500_000),
        ("1", 1_000_000),
        ("1.70", 1_500_000),
        ("1.4999999", 1_000_000),
        ("2.5", 2_500_000),
        ("100", 100_000_000),
    ],
)
def test_whole_packs_of_what_arrived_are_credited(app, client, processors, value_coin, credited):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=1)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", value_coin)))
    assert balance(client, agent) == credited
    assert [e["postings"] for e in payments(app)] == [
        sorted([(books.wallet_code(agent.account_id), credited), (books.PROCESSOR_B, -credited)])
    ]


def test_less_than_a_pack_credits_nothing_but_is_recorded(app, client, processors, caplog):
    caplog.set_level(logging.INFO)
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=1)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "0.40")))
    assert balance(client, agent) == 0
    assert funded(client, agent) is False
    assert payments(app) == []
    assert processor_events(app) == [("processor_b", f"{deposit.address}:pay-1", 0)]
    assert invoice_status(app, deposit.address) == "open"
    below = [
        r.msg
        for r in caplog.records
        if isinstance(r.msg, dict) and r.msg.get("event") == "processor_payment_below_one_pack"
    ]
    assert [line["invoice"] for line in below] == [deposit.invoice_id]
    # A redelivery of that payment, even claiming more, credits nothing.
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "0.40")))
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "5")))
    assert balance(client, agent) == 0
    assert len(processor_events(app)) == 1


def test_an_overpayment_is_credited_in_whole_packs(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=3)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "5")))
    assert balance(client, agent) == 5_000_000  # 10 packs, not the 3 invoiced
    (entry,) = payments(app)
    assert "10 packs" in entry["memo"] and "10000 credits" in entry["memo"]


def test_an_underpayment_of_a_floor_raised_invoice_credits_what_arrived(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=1, chain="usdttrc20")  # raised to 20
    assert deposit.invoice.pack_count == 20
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "1.25")))
    assert balance(client, agent) == 1_000_000


def test_a_redelivered_payment_is_ok_and_credits_nothing_more(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=2)
    fields = deposit.fields("pay-1", "1.00")
    for _ in range(4):
        assert_ok(deliver(client, deposit, fields))
    assert_ok(client.post(deposit.callback, json=fields))  # re-encoded, still the same payment
    assert balance(client, agent) == 1_000_000
    assert len(payments(app)) == 1
    assert len(processor_events(app)) == 1


def test_a_second_payment_to_the_same_address_is_credited_too(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=2)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "0.50")))
    assert_ok(deliver(client, deposit, deposit.fields("pay-2", "0.50")))
    assert_ok(deliver(client, deposit, deposit.fields("pay-2", "0.50")))
    assert balance(client, agent) == 1_000_000
    assert [e["reference"] for e in payments(app)] == [deposit.invoice_id] * 2
    assert processor_events(app) == sorted(
        [
            ("processor_b", f"{deposit.address}:pay-1", 500_000),
            ("processor_b", f"{deposit.address}:pay-2", 500_000),
        ]
    )


def test_the_same_uuid_at_another_address_is_another_payment(app, client, processors):
    agent = register(client)
    first = new_deposit(client, processors, agent)
    second = new_deposit(client, processors, agent)
    assert_ok(deliver(client, first, first.fields("same-uuid", "0.5")))
    assert_ok(deliver(client, second, second.fields("same-uuid", "0.5")))
    assert balance(client, agent) == 1_000_000
    assert sorted(e["reference"] for e in payments(app)) == sorted(
        [first.invoice_id, second.invoice_id]
    )


def test_a_json_callback_is_accepted(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=2)
    response = client.post(deposit.callback, json=deposit.fields("pay-1", "1.00"))
    assert_ok(response)
    assert balance(client, agent) == 1_000_000
    assert funded(client, agent) is True


def test_a_json_callback_with_numbers_is_accepted(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=2)
    document: dict[str, Any] = deposit.fields("pay-1", "x")
    document.update(value_coin=1.2, pending=0)
    assert_ok(client.post(deposit.callback, json=document))
    assert balance(client, agent) == 1_000_000


def test_a_callback_without_the_invoice_parameter_is_matched_by_address(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    assert_ok(client.post("/webhooks/processor-b", data=deposit.fields("pay-1", "0.5")))
    assert balance(client, agent) == PACK_MICRO


@pytest.mark.parametrize("chain", sorted(COINS))
def test_each_chain_credits_with_its_own_coin(app, client, processors, chain):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, packs=1, chain=chain)
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "10")))
    assert balance(client, agent) == 10_000_000


def test_a_callback_without_coin_is_matched_by_address(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = deposit.fields("pay-1", "0.5")
    del fields["coin"]
    assert_ok(deliver(client, deposit, fields))
    assert balance(client, agent) == PACK_MICRO


# --- refused callbacks -----------------------------------------------------------------


def test_an_unknown_address_is_404(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = processor_b_callback("0x" + "11" * 20, "pay-1", "5")
    assert_problem(client.post(deposit.callback, data=fields), 404, "not_found")
    assert_problem(client.post("/webhooks/processor-b", data=fields), 404, "not_found")
    assert_nothing_credited(app, client, agent, "processor_b")


def test_a_processor_a_charge_is_not_a_deposit_address(app, client, processors):
    agent = register(client)
    response = client.post(
        "/dashboard/credits",
        json={"pack_count": 1, "processor": "processor_a"},
        headers=agent.headers,
    )
    charge_id = response.json()["processor_id"]
    fields = processor_b_callback(charge_id, "pay-1", "5")
    assert_problem(client.post("/webhooks/processor-b", data=fields), 404, "not_found")
    assert_nothing_credited(app, client, agent, "processor_b")


def test_an_invoice_parameter_naming_another_invoice_is_409(app, client, processors):
    agent, other = register(client), register(client)
    mine = new_deposit(client, processors, agent)
    theirs = new_deposit(client, processors, other)
    # processor_b posts mine's payment to theirs's callback URL.
    problem = assert_problem(
        client.post(theirs.callback, data=mine.fields("pay-1", "5")), 409, "invoice_conflict"
    )
    assert "invoice" in problem["detail"]
    assert_problem(
        client.post(
            "/webhooks/processor-b?invoice=00000000-0000-4000-8000-000000000000",
            data=mine.fields("pay-1", "5"),
        ),
        409,
        "invoice_conflict",
    )
    assert_nothing_credited(app, client, agent, "processor_b")
    assert balance(client, other) == 0
    # The payment delivered where it belongs is then credited (the refusal recorded nothing).
    assert_ok(deliver(client, mine, mine.fields("pay-1", "5")))
    assert balance(client, agent) == 5_000_000


@pytest.mark.parametrize(
    ("chain", "coin"),
    [
        ("usdtpolygon", "trc20_usdt"),
        ("usdtpolygon", "polygon_usdc"),
        ("usdtpolygon", "btc"),
        ("usdttrc20", "polygon_usdt"),
        ("usdc", "erc20_usdt"),
        ("usdcbase", "base_usdt"),
    ],
)
def test_a_coin_of_another_chain_is_409(app, client, processors, chain, coin):
    agent = register(client)
    deposit = new_deposit(client, processors, agent, chain=chain)
    assert_problem(
        deliver(client, deposit, deposit.fields("pay-1", "50", coin=coin)),
        409,
        "invoice_conflict",
    )
    assert_nothing_credited(app, client, agent, "processor_b")


@pytest.mark.parametrize(
    "value_coin", ["", "abc", "-1", "-0.5", "NaN", "Infinity", "-Infinity", "1e10", "0x10"]
)
def test_a_bad_value_coin_is_400(app, client, processors, value_coin):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    problem = assert_problem(
        deliver(client, deposit, deposit.fields("pay-1", value_coin)), 400, "invalid_input"
    )
    assert "value_coin" in problem["detail"]
    assert_nothing_credited(app, client, agent, "processor_b")
    # The processor's retry with a good amount is credited.
    assert_ok(deliver(client, deposit, deposit.fields("pay-1", "0.5")))
    assert balance(client, agent) == PACK_MICRO


def test_a_missing_value_coin_is_400(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = deposit.fields("pay-1", "1")
    del fields["value_coin"]
    assert_problem(deliver(client, deposit, fields), 400, "invalid_input")
    assert_nothing_credited(app, client, agent, "processor_b")


@pytest.mark.parametrize("missing", ["address_in", "uuid", "pending"])
def test_a_callback_without_address_uuid_or_pending_is_400(app, client, processors, missing):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = deposit.fields("pay-1", "5")
    del fields[missing]
    assert_problem(deliver(client, deposit, fields), 400, "invalid_input")
    assert_nothing_credited(app, client, agent, "processor_b")


@pytest.mark.parametrize("pending", ["2", "", "true", "-1"])
def test_a_pending_other_than_0_or_1_is_400(app, client, processors, pending):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    assert_problem(
        deliver(client, deposit, deposit.fields("pay-1", "5", pending=pending)),
        400,
        "invalid_input",
    )
    assert_nothing_credited(app, client, agent, "processor_b")


@pytest.mark.parametrize("body", [b"[1, 2]", b'{"uuid": ', b'"text"'])
def test_a_body_that_is_neither_form_nor_object_is_400(app, client, processors, body):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    response = client.post(
        deposit.callback, content=body, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400, "invalid_input")
    assert_nothing_credited(app, client, agent, "processor_b")


# --- where callbacks may come from -----------------------------------------------------


def test_a_callback_from_another_address_is_403(app, client, processors):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = deposit.fields("pay-1", "5")
    with TestClient(app, client=OUTSIDER, raise_server_exceptions=False) as outsider:
        problem = assert_problem(deliver(outsider, deposit, fields), 403, "forbidden")
        assert "published addresses" in problem["detail"]
        assert_problem(outsider.post(deposit.callback, json=fields), 403, "forbidden")
        # Pending or not, well-formed or not: refused before anything is read.
        assert_problem(
            deliver(outsider, deposit, deposit.fields("pay-1", "5", pending=1)), 403, "forbidden"
        )
        assert_problem(deliver(outsider, deposit, {}), 403, "forbidden")
    assert_nothing_credited(app, client, agent, "processor_b")
    # From processor_b itself the same payment is credited.
    assert_ok(deliver(client, deposit, fields))
    assert balance(client, agent) == 5_000_000


@pytest.mark.parametrize(
    "forwarded", ["127.0.0.1", "127.0.0.1, 127.0.0.1", PUBLISHED, "127.0.0.1, 203.0.113.9"]
)
def test_a_spoofed_forwarded_for_from_an_untrusted_peer_is_403(app, client, processors, forwarded):
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    with TestClient(app, client=OUTSIDER, raise_server_exceptions=False) as outsider:
        assert_problem(
            deliver(
                outsider,
                deposit,
                deposit.fields("pay-1", "5"),
                headers={"X-Forwarded-For": forwarded},
            ),
            403,
            "forbidden",
        )
    assert_nothing_credited(app, client, agent, "processor_b")


@pytest.fixture
def proxied(make_payments_app) -> FastAPI:
    """The broker behind a proxy on 127.0.0.1; processor_b's address is PUBLISHED."""
    return make_payments_app(trusted_proxies="127.0.0.1", processor_b_callback_sources=PUBLISHED)


def test_a_trusted_proxy_forwarding_a_published_address_is_believed(proxied, processors):
    with TestClient(proxied, client=SOURCE, raise_server_exceptions=False) as proxy:
        agent = register(proxy)
        deposit = new_deposit(proxy, processors, agent, packs=2)
        fields = deposit.fields("pay-1", "1.00")
        # The proxy itself is not processor_b.
        assert_problem(deliver(proxy, deposit, fields), 403, "forbidden")
        # Nor is a client that wrote the published address left of its own.
        assert_problem(
            deliver(proxy, deposit, fields, headers={"X-Forwarded-For": f"{PUBLISHED}, 10.9.8.7"}),
            403,
            "forbidden",
        )
        assert balance(proxy, agent) == 0
        assert_ok(deliver(proxy, deposit, fields, headers={"X-Forwarded-For": PUBLISHED}))
        assert balance(proxy, agent) == 1_000_000
        assert funded(proxy, agent) is True


def test_a_published_address_forwarded_by_an_untrusted_peer_is_403(proxied, processors):
    with TestClient(proxied, client=SOURCE, raise_server_exceptions=False) as proxy:
        agent = register(proxy)
        deposit = new_deposit(proxy, processors, agent)
    with TestClient(proxied, client=OUTSIDER, raise_server_exceptions=False) as outsider:
        response = deliver(
            outsider, deposit, deposit.fields("pay-1", "5"), headers={"X-Forwarded-For": PUBLISHED}
        )
        assert_problem(response, 403, "forbidden")
    assert_nothing_credited(proxied, proxy, agent, "processor_b")


def test_callback_sources_may_be_ranges(make_payments_app, processors):
    app = make_payments_app(processor_b_callback_sources="10.0.0.0/8, 127.0.0.0/24")
    with TestClient(app, client=("127.0.0.200", 1), raise_server_exceptions=False) as client:
        agent = register(client)
        deposit = new_deposit(client, processors, agent)
        assert_ok(deliver(client, deposit, deposit.fields("pay-1", "0.5")))
        assert balance(client, agent) == PACK_MICRO


def test_the_default_sources_do_not_include_loopback(make_payments_app, processors):
    """With processor_b's default published addresses, a local caller is refused."""
    app = make_payments_app(processor_b_callback_sources="51.77.105.132,135.125.112.47")
    with TestClient(app, client=SOURCE, raise_server_exceptions=False) as client:
        agent = register(client)
        deposit = new_deposit(client, processors, agent)
        assert_problem(deliver(client, deposit, deposit.fields("pay-1", "5")), 403, "forbidden")
        assert balance(client, agent) == 0


# --- what refusals log -----------------------------------------------------------------


def test_every_refusal_logs_one_line_without_body_or_secret(app, client, processors, caplog):
    caplog.set_level(logging.INFO)
    agent, other = register(client), register(client)
    deposit = new_deposit(client, processors, agent)
    theirs = new_deposit(client, processors, other)
    fields = deposit.fields("pay-marker-5c1e", "5")
    txid = fields["txid_in"]
    caplog.clear()
    with TestClient(app, client=OUTSIDER, raise_server_exceptions=False) as outsider:
        statuses = [deliver(outsider, deposit, fields).status_code]
    statuses += [
        deliver(client, deposit, {**fields, "value_coin": "nonsense"}).status_code,
        deliver(client, deposit, {k: v for k, v in fields.items() if k != "uuid"}).status_code,
        client.post(deposit.callback, data={**fields, "address_in": "0x" + "22" * 20}).status_code,
        client.post(theirs.callback, data=fields).status_code,
        deliver(client, deposit, {**fields, "coin": "trc20_usdt"}).status_code,
        deliver(client, deposit, fields).status_code,  # the payment itself
        deliver(client, deposit, fields).status_code,  # its redelivery: not a refusal
    ]
    assert statuses == [403, 400, 400, 404, 409, 409, 200, 200]
    logged = callback_refusals(caplog)
    assert len(logged) == 6
    assert all(line["processor"] == "processor_b" and line["why"] for line in logged)
    assert logged[0]["source"] == OUTSIDER[0]
    assert logged[4]["invoice"] == deposit.invoice_id
    formatter = json_formatter()
    output = "\n".join(formatter.format(r) for r in caplog.records) + "\n" + caplog.text
    for secret in (
        WEBHOOK_SECRET,
        "processor-a-api-key",
        txid,
        "pay-marker-5c1e",
        "nonsense",
        agent.api_key,
    ):
        assert secret not in output, secret


def test_a_body_refusal_is_logged_too(app, client, processors, caplog):
    caplog.set_level(logging.INFO)
    caplog.clear()
    response = client.post(
        "/webhooks/processor-b", content=b"{bad", headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 400, "invalid_input")
    assert len(callback_refusals(caplog)) == 1


def test_a_long_payment_uuid_is_no_server_error(app, client, processors):
    """The event key is f"{address_in}:{uuid}" in a VARCHAR(300): a uuid of 400 characters
    must be refused or stored, never a 500 (at 9377218 PostgreSQL answered 500 with a
    DataError, SQLite, which does not enforce the length, credited it)."""
    agent = register(client)
    deposit = new_deposit(client, processors, agent)
    fields = deposit.fields("u" * 400, "1")
    response = deliver(client, deposit, fields)
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        assert_ok(deliver(client, deposit, fields))  # the redelivery credits nothing more
        assert balance(client, agent) == 1_000_000
    else:
        assert_problem(response, 400, "invalid_input")
        assert_nothing_credited(app, client, agent, "processor_b")
