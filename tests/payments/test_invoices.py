"""POST /dashboard/credits (docs/interface.md §17.1): one pack is 1,000 credits for 500,000 µUSD;
pack bounds per processor (processor_a 1-10, processor_b 1-200) and processor_b's chain
floors (a smaller order is raised to the floor); usdtbase refused; usdtpolygon by
default, the chain ignored for processor_a; a stub invoice off production when no
processor is named or the named one is not configured, 400/502 on production; 502 and
nothing stored when a processor's API cannot give a usable answer; what each processor's
API was asked."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from agent_broker.payments.models import Invoice, ProcessorEvent
from tests.support.accounts import Agent, register
from tests.support.http import assert_problem
from tests.support.payments import FORWARD_TO, SOURCE, WEBHOOK_SECRET, buy
from tests.support.processors import processor_a_callback, processor_b_callback
from tests.support.settings import PUBLIC_BASE_URL as BASE

PACK_MICRO = 500_000
PACK_CREDITS = 1_000
PRODUCTION = {
    "env": "production",
    "key_hash_secret": "production-key-hash-secret-0123456789abcdef",
    "signing_key": "5e" * 32,
    "card_signing_key": "6f" * 32,
}
TICKERS = {
    "usdttrc20": "trc20/usdt",
    "usdterc20": "erc20/usdt",
    "usdc": "erc20/usdc",
    "usdcsol": "sol/usdc",
    "usdtpolygon": "polygon/usdt",
    "usdcpolygon": "polygon/usdc",
    "usdcbase": "base/usdc",
}
FORWARD = {
    **dict.fromkeys(TICKERS, FORWARD_TO),
    "usdttrc20": "T" + "f" * 33,
    "usdcsol": "So1" + "f" * 40,
}


def invoices(app: FastAPI) -> list[Invoice]:
    with app.state.context.db.reader() as session:
        rows = session.scalars(select(Invoice).order_by(Invoice.created_at)).all()
        session.expunge_all()
    return list(rows)


def invoice_count(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return int(session.scalar(select(func.count()).select_from(Invoice)))


def the_invoice(app: FastAPI, processor_id: str) -> Invoice:
    (row,) = [row for row in invoices(app) if row.processor_id == processor_id]
    return row


def headers_of(request: tuple[str, str, dict[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in request[2].items()}


# --- the answer ------------------------------------------------------------------------


def test_a_processor_a_invoice_answers_201_with_its_charge(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=3, processor="processor_a")
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == {"payment_url", "amount_micro", "credits_to_add", "processor_id"}
    (charge_id,) = processors.charges
    assert body == {
        "payment_url": f"{processors.base_url}/checkout/{charge_id}",
        "amount_micro": 1_500_000,
        "credits_to_add": 3_000,
        "processor_id": charge_id,
    }
    row = the_invoice(app, charge_id)
    assert (row.account_id, row.processor, row.chain) == (agent.account_id, "processor_a", None)
    assert (row.pack_count, row.amount_micro, row.status) == (3, 1_500_000, "open")
    assert row.payment_url == body["payment_url"]
    assert row.paid_at is None


def test_a_processor_b_invoice_answers_201_with_its_deposit_address(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=2, processor="processor_b", chain="usdcpolygon")
    assert response.status_code == 201, response.text
    (address,) = processors.addresses
    assert response.json() == {
        "payment_url": f"{BASE}/dashboard/pay/{address}",
        "amount_micro": 1_000_000,
        "credits_to_add": 2_000,
        "processor_id": address,
    }
    row = the_invoice(app, address)
    assert (row.processor, row.chain, row.pack_count, row.amount_micro) == (
        "processor_b",
        "usdcpolygon",
        2,
        1_000_000,
    )
    assert row.payment_url == f"{BASE}/dashboard/pay/{address}"


@pytest.mark.parametrize("packs", [1, 2, 7, 10])
def test_credits_and_amount_are_whole_packs(client, processors, packs):
    agent = register(client)
    body = buy(client, agent, pack_count=packs, processor="processor_a").json()
    assert body["credits_to_add"] == PACK_CREDITS * packs
    assert body["amount_micro"] == PACK_MICRO * packs


# --- what the processors were asked ----------------------------------------------------


def test_processor_a_is_asked_for_a_usd_charge_of_the_invoice(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=2, processor="processor_a")
    assert response.status_code == 201, response.text
    charge_id = response.json()["processor_id"]
    request = processors.charges[charge_id]
    invoice = the_invoice(app, charge_id)
    assert request["amount"] == "1.00"
    assert request["currency"] == "USD"
    assert request["order_id"] == invoice.id
    assert request["callback_url"] == f"{BASE}/webhooks/processor-a"
    ((method, path, _),) = processors.requests
    assert (method, path) == ("POST", "/v1/charges")
    assert headers_of(processors.requests[0])["authorization"] == "processor-a-api-key"


@pytest.mark.parametrize(("packs", "amount"), [(1, "0.50"), (3, "1.50"), (10, "5.00")])
def test_processor_a_charge_amounts_are_dollars_and_cents(client, processors, packs, amount):
    agent = register(client)
    charge_id = buy(client, agent, pack_count=packs, processor="processor_a").json()["processor_id"]
    assert processors.charges[charge_id]["amount"] == amount


def test_processor_b_is_asked_for_an_address_forwarding_to_the_operator(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=1, processor="processor_b", chain="usdterc20")
    assert response.status_code == 201, response.text
    address = response.json()["processor_id"]
    query = processors.addresses[address]
    invoice = the_invoice(app, address)
    assert query["callback"] == f"{BASE}/webhooks/processor-b?invoice={invoice.id}"
    assert query["address"] == FORWARD_TO
    assert query["post"] == "1"
    assert query["ticker"] == "erc20/usdt"
    ((method, path, _),) = processors.requests
    assert method == "GET"
    assert urlsplit(path).path == "/erc20/usdt/create/"
    # processor_a's API key is not sent to processor_b.
    assert "authorization" not in headers_of(processors.requests[0])
    assert "processor-a-api-key" not in path


def test_processor_b_callback_url_names_the_invoice_exactly(app, client, processors):
    agent = register(client)
    address = buy(client, agent, pack_count=1, processor="processor_b").json()["processor_id"]
    callback = urlsplit(processors.addresses[address]["callback"])
    assert f"{callback.scheme}://{callback.netloc}{callback.path}" == (
        f"{BASE}/webhooks/processor-b"
    )
    assert parse_qs(callback.query) == {"invoice": [the_invoice(app, address).id]}


def test_each_invoice_gets_its_own_charge_and_address(app, client, processors):
    agent = register(client)
    a1 = buy(client, agent, pack_count=1, processor="processor_a").json()["processor_id"]
    a2 = buy(client, agent, pack_count=1, processor="processor_a").json()["processor_id"]
    b1 = buy(client, agent, pack_count=1, processor="processor_b").json()["processor_id"]
    b2 = buy(client, agent, pack_count=1, processor="processor_b").json()["processor_id"]
    assert len({a1, a2, b1, b2}) == 4
    rows = invoices(app)
    assert len(rows) == 4 and len({row.id for row in rows}) == 4
    assert {processors.charges[a]["order_id"] for a in (a1, a2)} == {
        the_invoice(app, a1).id,
        the_invoice(app, a2).id,
    }


# --- pack bounds -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("processor", "packs", "low", "high"),
    [
        ("processor_a", 0, 1, 10),
        ("processor_a", 11, 1, 10),
        ("processor_a", -1, 1, 10),
        ("processor_a", 200, 1, 10),
        ("processor_b", 0, 1, 200),
        ("processor_b", 201, 1, 200),
        ("processor_b", -5, 1, 200),
        ("processor_b", 10**9, 1, 200),
    ],
)
def test_pack_count_out_of_bounds_is_400_naming_the_bounds(
    app, client, processors, processor, packs, low, high
):
    agent = register(client)
    problem = assert_problem(
        buy(client, agent, pack_count=packs, processor=processor), 400, "invalid_input"
    )
    assert f"between {low} and {high}" in problem["detail"]
    assert processor in problem["detail"]
    assert invoice_count(app) == 0
    assert processors.requests == []


@pytest.mark.parametrize(("processor", "packs"), [("processor_a", 1), ("processor_a", 10)])
def test_processor_a_bounds_are_inclusive(client, processors, processor, packs):
    agent = register(client)
    response = buy(client, agent, pack_count=packs, processor=processor)
    assert response.status_code == 201, response.text
    assert response.json()["amount_micro"] == packs * PACK_MICRO


@pytest.mark.parametrize("packs", [1, 200])
def test_processor_b_bounds_are_inclusive(client, processors, packs):
    agent = register(client)
    response = buy(client, agent, pack_count=packs, processor="processor_b")
    assert response.status_code == 201, response.text
    assert response.json()["credits_to_add"] == packs * PACK_CREDITS


def test_bounds_are_checked_before_the_chain_floor(app, client, processors):
    agent = register(client)
    problem = assert_problem(
        buy(client, agent, pack_count=201, processor="processor_b", chain="usdttrc20"),
        400,
        "invalid_input",
    )
    assert "between 1 and 200" in problem["detail"]
    problem = assert_problem(
        buy(client, agent, pack_count=0, processor="processor_b", chain="usdttrc20"),
        400,
        "invalid_input",
    )
    assert "between 1 and 200" in problem["detail"]
    assert invoice_count(app) == 0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"pack_count": "three", "processor": "processor_a"},
        {"pack_count": 1.5, "processor": "processor_a"},
        {"pack_count": None, "processor": "processor_a"},
        {"pack_count": 1, "processor": "processor_c"},
        {"pack_count": 1, "processor": "processor_b", "chain": "btc"},
        {"pack_count": 1, "processor": "PROCESSOR_A"},
    ],
)
def test_malformed_requests_are_400(app, client, processors, body):
    agent = register(client)
    assert_problem(
        client.post("/dashboard/credits", json=body, headers=agent.headers), 400, "invalid_input"
    )
    assert invoice_count(app) == 0
    assert processors.requests == []


# --- chains ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chain", "asked", "packs"),
    [
        ("usdttrc20", 1, 20),
        ("usdttrc20", 19, 20),
        ("usdttrc20", 20, 20),
        ("usdttrc20", 21, 21),
        ("usdterc20", 1, 4),
        ("usdterc20", 3, 4),
        ("usdterc20", 5, 5),
        ("usdc", 1, 4),
        ("usdc", 4, 4),
        ("usdcsol", 1, 1),
        ("usdtpolygon", 1, 1),
        ("usdcpolygon", 1, 1),
        ("usdcbase", 1, 1),
    ],
)
def test_chain_floors_raise_the_order(app, client, processors, chain, asked, packs):
    agent = register(client)
    response = buy(client, agent, pack_count=asked, processor="processor_b", chain=chain)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["amount_micro"] == packs * PACK_MICRO
    assert body["credits_to_add"] == packs * PACK_CREDITS
    row = the_invoice(app, body["processor_id"])
    assert (row.chain, row.pack_count, row.amount_micro) == (chain, packs, packs * PACK_MICRO)
    query = processors.addresses[body["processor_id"]]
    assert query["ticker"] == TICKERS[chain]
    assert query["address"] == FORWARD[chain]


@pytest.mark.parametrize("processor", ["processor_b", None])
def test_usdtbase_is_refused(app, client, processors, processor):
    agent = register(client)
    body = {"pack_count": 5, "chain": "usdtbase"}
    if processor:
        body["processor"] = processor
    problem = assert_problem(buy(client, agent, **body), 400, "invalid_input")
    assert "not offered" in problem["detail"]
    assert invoice_count(app) == 0
    assert processors.requests == []


def test_processor_a_ignores_the_chain_even_one_not_offered(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=5, processor="processor_a", chain="usdtbase")
    assert response.status_code == 201, response.text
    row = the_invoice(app, response.json()["processor_id"])
    assert (row.processor, row.chain) == ("processor_a", None)


def test_usdcbase_is_offered(client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=1, processor="processor_b", chain="usdcbase")
    assert response.status_code == 201, response.text
    assert processors.addresses[response.json()["processor_id"]]["ticker"] == "base/usdc"


def test_the_default_chain_is_usdt_on_polygon(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=1, processor="processor_b")
    assert response.status_code == 201, response.text
    address = response.json()["processor_id"]
    assert processors.addresses[address]["ticker"] == "polygon/usdt"
    assert the_invoice(app, address).chain == "usdtpolygon"


@pytest.mark.parametrize("chain", ["usdttrc20", "usdterc20", "usdc", "usdcpolygon"])
def test_processor_a_ignores_the_chain(app, client, processors, chain):
    agent = register(client)
    response = buy(client, agent, pack_count=1, processor="processor_a", chain=chain)
    assert response.status_code == 201, response.text
    body = response.json()
    # No chain floor: one pack stays one pack.
    assert (body["amount_micro"], body["credits_to_add"]) == (PACK_MICRO, PACK_CREDITS)
    assert the_invoice(app, body["processor_id"]).chain is None
    assert processors.addresses == {}
    assert processors.charges[body["processor_id"]]["amount"] == "0.50"


# --- stubs and production --------------------------------------------------------------


def _assert_stub(app: FastAPI, body: dict[str, Any], packs: int, chain: str | None) -> None:
    assert set(body) == {"payment_url", "amount_micro", "credits_to_add", "processor_id"}
    stub_id = body["processor_id"]
    assert stub_id.startswith("stub_") and len(stub_id) > len("stub_")
    assert body["payment_url"] == f"{BASE}/dashboard/pay/{stub_id}"
    assert (body["amount_micro"], body["credits_to_add"]) == (
        packs * PACK_MICRO,
        packs * PACK_CREDITS,
    )
    row = the_invoice(app, stub_id)
    assert (row.processor, row.chain, row.pack_count, row.status) == ("stub", chain, packs, "open")


@pytest.mark.parametrize("env", ["development", "staging"])
def test_no_processor_off_production_is_a_stub_invoice(make_payments_app, processors, env):
    app = make_payments_app(env=env)
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        response = buy(client, agent, pack_count=3)
        assert response.status_code == 201, response.text
        _assert_stub(app, response.json(), 3, None)
        second = buy(client, agent, pack_count=3).json()["processor_id"]
    assert second != response.json()["processor_id"]
    assert processors.requests == []


@pytest.mark.parametrize("env", ["development", "staging"])
def test_stub_bounds_are_1_to_200(make_payments_app, processors, env):
    app = make_payments_app(env=env)
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        assert buy(client, agent, pack_count=200).status_code == 201
        for packs in (0, 201):
            problem = assert_problem(buy(client, agent, pack_count=packs), 400, "invalid_input")
            assert "between 1 and 200" in problem["detail"]
    assert invoice_count(app) == 1


@pytest.mark.parametrize("env", ["development", "staging"])
def test_an_unconfigured_processor_off_production_is_a_stub(make_payments_app, processors, env):
    app = make_payments_app(
        env=env,
        processor_a_api_key="",
        processor_b_api_url="",
    )
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        a = buy(client, agent, pack_count=2, processor="processor_a")
        assert a.status_code == 201, a.text
        _assert_stub(app, a.json(), 2, None)
        b = buy(client, agent, pack_count=1, processor="processor_b", chain="usdterc20")
        assert b.status_code == 201, b.text
        _assert_stub(app, b.json(), 4, "usdterc20")  # the floor still holds
    assert processors.requests == []


def test_a_chain_with_no_forward_address_off_production_is_a_stub(make_payments_app, processors):
    app = make_payments_app(processor_b_address_usdcsol="")
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        response = buy(client, agent, pack_count=1, processor="processor_b", chain="usdcsol")
        assert response.status_code == 201, response.text
        _assert_stub(app, response.json(), 1, "usdcsol")
        # Other chains still go to processor_b.
        other = buy(client, agent, pack_count=1, processor="processor_b", chain="usdcpolygon")
        assert not other.json()["processor_id"].startswith("stub_")
    assert len(processors.addresses) == 1


@pytest.mark.parametrize("missing", ["processor_a_api_url", "processor_a_webhook_secret"])
def test_processor_a_needs_its_url_key_and_secret(make_payments_app, processors, missing):
    app = make_payments_app(**{missing: ""})
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        response = buy(client, agent, pack_count=1, processor="processor_a")
        assert response.status_code == 201, response.text
        assert response.json()["processor_id"].startswith("stub_")
    assert processors.requests == []


@pytest.fixture
def production(make_payments_app: Callable[..., FastAPI]) -> Callable[..., FastAPI]:
    def build(**overrides: Any) -> FastAPI:
        return make_payments_app(**{**PRODUCTION, **overrides})

    return build


def test_production_settings_build(production):
    app = production()
    assert app.state.context.settings.env == "production"


def test_production_requires_a_processor(production, processors):
    app = production()
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        problem = assert_problem(buy(client, agent, pack_count=1), 400, "invalid_input")
        assert "processor_a" in problem["detail"] and "processor_b" in problem["detail"]
        problem = assert_problem(
            buy(client, agent, pack_count=1, chain="usdcpolygon"), 400, "invalid_input"
        )
        assert "processor_a, processor_b" in problem["detail"]
    assert invoice_count(app) == 0
    assert processors.requests == []


def test_production_pays_through_configured_processors(production, processors):
    app = production()
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        a = buy(client, agent, pack_count=1, processor="processor_a")
        b = buy(client, agent, pack_count=1, processor="processor_b")
    assert a.status_code == b.status_code == 201
    assert a.json()["processor_id"] in processors.charges
    assert b.json()["processor_id"] in processors.addresses


@pytest.mark.parametrize(
    ("overrides", "processor", "chain", "named"),
    [
        ({"processor_a_api_url": ""}, "processor_a", None, "processor_a"),
        ({"processor_a_api_key": ""}, "processor_a", None, "processor_a"),
        ({"processor_a_webhook_secret": ""}, "processor_a", None, "processor_a"),
        ({"processor_b_api_url": ""}, "processor_b", None, "processor_b"),
        ({"processor_b_address_usdttrc20": ""}, "processor_b", "usdttrc20", "usdttrc20"),
        ({"processor_b_address_usdcbase": ""}, "processor_b", "usdcbase", "usdcbase"),
    ],
)
def test_an_unconfigured_processor_on_production_is_502(
    production, processors, overrides, processor, chain, named
):
    app = production(**overrides)
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        body: dict[str, Any] = {"pack_count": 1, "processor": processor}
        if chain:
            body["chain"] = chain
        problem = assert_problem(buy(client, agent, **body), 502, "processor_unavailable")
        assert named in problem["detail"]
        assert "not configured" in problem["detail"]
    assert invoice_count(app) == 0
    assert processors.requests == []


# --- the processor's API fails ---------------------------------------------------------


@pytest.mark.parametrize("status", [503, 404, 302])
@pytest.mark.parametrize("processor", ["processor_a", "processor_b"])
def test_a_failing_processor_api_is_502_and_stores_nothing(
    app, client, processors, processor, status
):
    agent = register(client)
    processors.fail_with = status
    problem = assert_problem(
        buy(client, agent, pack_count=1, processor=processor), 502, "processor_unavailable"
    )
    assert processor in problem["detail"]
    assert "Nothing was charged" in problem["detail"]
    assert len(processors.requests) == 1  # it was asked, once
    assert invoice_count(app) == 0
    # It recovers: the next order goes through.
    processors.fail_with = None
    assert buy(client, agent, pack_count=1, processor=processor).status_code == 201
    assert invoice_count(app) == 1


@pytest.mark.parametrize("processor", ["processor_a", "processor_b"])
def test_a_garbage_answer_is_502_and_stores_nothing(app, client, processors, processor):
    """2xx with a body naming no charge or address (the fake's error document)."""
    agent = register(client)
    processors.fail_with = 200
    assert_problem(
        buy(client, agent, pack_count=1, processor=processor), 502, "processor_unavailable"
    )
    assert invoice_count(app) == 0
    assert processors.charges == {} and processors.addresses == {}


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("processor", ["processor_a", "processor_b"])
def test_an_unreachable_processor_is_502_and_stores_nothing(make_payments_app, processor):
    url = _closed_port_url()
    app = make_payments_app(processor_a_api_url=url, processor_b_api_url=url)
    with TestClient(app, client=SOURCE) as client:
        agent = register(client)
        assert_problem(
            buy(client, agent, pack_count=1, processor=processor), 502, "processor_unavailable"
        )
    assert invoice_count(app) == 0


# --- who may buy -----------------------------------------------------------------------


def test_buying_needs_a_credential(app, client, processors):
    assert_problem(buy(client, None, pack_count=1, processor="processor_a"), 401, "unauthorized")
    bogus = Agent(account_id="", api_key="ak_" + "0" * 40)
    assert_problem(buy(client, bogus, pack_count=1, processor="processor_a"), 401, "unauthorized")
    assert invoice_count(app) == 0
    assert processors.requests == []


def test_an_api_key_is_enough(app, client, processors):
    agent = register(client)
    response = buy(client, agent, pack_count=1, processor="processor_b")
    assert response.status_code == 201, response.text
    assert the_invoice(app, response.json()["processor_id"]).account_id == agent.account_id


def test_each_invoice_belongs_to_its_buyer(app, client, processors):
    first, second = register(client), register(client)
    one = buy(client, first, pack_count=1, processor="processor_a").json()["processor_id"]
    two = buy(client, second, pack_count=1, processor="processor_a").json()["processor_id"]
    assert the_invoice(app, one).account_id == first.account_id
    assert the_invoice(app, two).account_id == second.account_id


# --- a stub cannot be paid -------------------------------------------------------------


def test_no_callback_pays_a_stub_invoice(make_payments_app, processors):
    app = make_payments_app()
    with TestClient(app, client=SOURCE, raise_server_exceptions=False) as client:
        agent = register(client)
        stub_id = buy(client, agent, pack_count=1).json()["processor_id"]
        stub = the_invoice(app, stub_id)
        body, headers = processor_a_callback(WEBHOOK_SECRET, stub_id)
        assert_problem(
            client.post("/webhooks/processor-a", content=body, headers=headers), 404, "not_found"
        )
        body, headers = processor_a_callback(WEBHOOK_SECRET, stub_id, order_id=stub.id)
        assert_problem(
            client.post("/webhooks/processor-a", content=body, headers=headers), 404, "not_found"
        )
        fields = processor_b_callback(stub_id, "uuid-1", "100")
        response = client.post(f"/webhooks/processor-b?invoice={stub.id}", data=fields)
        assert_problem(response, 404, "not_found")
        account = client.get("/v1/account", headers=agent.headers).json()
    assert account["balance_micro"] == 0
    assert account["reputation"]["funded"] is False
    assert the_invoice(app, stub_id).status == "open"
    with app.state.context.db.reader() as session:
        assert session.scalar(select(func.count()).select_from(ProcessorEvent)) == 0


def test_invoices_are_limited_per_account(make_payments_app, processors):
    """Each invoice asks the processor for a charge: BROKER_INVOICE_RATE_LIMIT per account.
    A refused order asks nothing and is not counted; another account has its own budget."""
    app = make_payments_app(invoice_rate_limit="2/hour")
    with TestClient(app, client=SOURCE, raise_server_exceptions=False) as client:
        agent, other = register(client), register(client)
        assert_problem(
            buy(client, agent, pack_count=0, processor="processor_a"), 400, "invalid_input"
        )
        for _ in range(2):
            assert buy(client, agent, pack_count=1, processor="processor_a").status_code == 201
        over = buy(client, agent, pack_count=1, processor="processor_a")
        problem = assert_problem(over, 429, "rate_limited")
        assert over.headers["Retry-After"] == str(problem["retryAfterSeconds"])
        assert buy(client, other, pack_count=1, processor="processor_a").status_code == 201
    assert invoice_count(app) == 3
    assert len(processors.requests) == 3
