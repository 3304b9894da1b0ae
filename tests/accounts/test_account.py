"""GET /v1/account: fields, authentication, balance and the stored key hash."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from agent_broker.accounts.models import Account
from tests.support.accounts import fund, register
from tests.support.http import assert_problem

ACCOUNT = "/v1/account"
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
SEED_FACET = {"rating_sum": 5, "rating_count": 1, "finalized_count": 0, "non_delivery_count": 0}


def _set_status(app, account_id: str, status: str) -> None:
    with app.state.context.db.writer() as session:
        session.get(Account, account_id).status = status
        session.commit()


def _stored_hash(app, account_id: str) -> str:
    with app.state.context.db.reader() as session:
        return session.get(Account, account_id).api_key_hash


def test_account_has_exactly_the_specified_fields(client):
    agent = register(client)

    response = client.get(ACCOUNT, headers=agent.headers)

    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {
        "account_id",
        "handle",
        "balance_micro",
        "held_micro",
        "status",
        "key_preview",
        "created_at",
        "reputation",
    }
    assert body["account_id"] == agent.account_id
    assert str(uuid.UUID(body["account_id"])) == body["account_id"]
    assert body["balance_micro"] == 0
    assert body["held_micro"] == 0
    assert body["status"] == "active"
    assert set(body["reputation"]) == {"buyer", "seller", "funded", "domain_verified"}


def test_reputation_is_seeded_per_role(client):
    agent = register(client)

    reputation = client.get(ACCOUNT, headers=agent.headers).json()["reputation"]

    assert reputation["buyer"] == SEED_FACET
    assert reputation["seller"] == SEED_FACET
    assert reputation["funded"] is False
    assert reputation["domain_verified"] is False


def test_handle_is_twelve_lowercase_hex_stable_and_unrelated_to_the_id(client):
    one = register(client)
    two = register(client)

    first = client.get(ACCOUNT, headers=one.headers).json()["handle"]
    again = client.get(ACCOUNT, headers=one.headers).json()["handle"]
    other = client.get(ACCOUNT, headers=two.headers).json()["handle"]

    assert re.fullmatch(r"[0-9a-f]{12}", first), first
    assert first == again
    assert re.fullmatch(r"[0-9a-f]{12}", other), other
    assert first != other
    for agent, handle in ((one, first), (two, other)):
        assert handle not in agent.account_id
        assert handle not in agent.account_id.replace("-", "")


def test_key_preview_masks_the_key_to_first_and_last_four(client):
    agent = register(client)

    preview = client.get(ACCOUNT, headers=agent.headers).json()["key_preview"]

    assert preview == f"{agent.api_key[:4]}...{agent.api_key[-4:]}"
    assert agent.api_key not in preview


def test_created_at_is_rfc3339_and_recent(client):
    before = datetime.now(UTC).replace(microsecond=0)
    agent = register(client)

    created_at = client.get(ACCOUNT, headers=agent.headers).json()["created_at"]

    assert RFC3339.fullmatch(created_at), created_at
    moment = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    assert moment.tzinfo is not None
    assert before - timedelta(seconds=1) <= moment <= datetime.now(UTC) + timedelta(seconds=1)
    # Stable across reads.
    assert client.get(ACCOUNT, headers=agent.headers).json()["created_at"] == created_at


# --- authentication ----------------------------------------------------------------------


def test_no_key_is_401(client):
    register(client)
    assert_problem(client.get(ACCOUNT), 401, "unauthorized")


@pytest.mark.parametrize("presented", ["ab_live_" + "0" * 32, "wrong", "x" * 300])
def test_wrong_key_is_401(client, presented):
    register(client)
    assert_problem(client.get(ACCOUNT, headers={"x-api-key": presented}), 401, "unauthorized")


def test_key_of_a_near_miss_is_401(client):
    agent = register(client)
    tampered = agent.api_key[:-1] + ("0" if agent.api_key[-1] != "0" else "1")
    assert_problem(client.get(ACCOUNT, headers={"x-api-key": tampered}), 401, "unauthorized")


@pytest.mark.parametrize(
    ("method", "path", "payload"),
    [
        ("GET", "/v1/account", None),
        ("GET", "/v1/account/profile", None),
        ("PUT", "/v1/account/contact", {"contact_name": "Ops", "contact_email": "ops@agents.dev"}),
        ("PUT", "/v1/account/route", {"deal_route": "https://agents.dev/deals/"}),
    ],
)
def test_disabled_account_key_is_403_api_key_disabled(app, client, method, path, payload):
    agent = register(client)
    _set_status(app, agent.account_id, "inactive")

    response = client.request(method, path, headers=agent.headers, json=payload)

    assert_problem(response, 403, "api_key_disabled")


def test_reactivated_account_key_works_again(app, client):
    agent = register(client)
    _set_status(app, agent.account_id, "inactive")
    assert_problem(client.get(ACCOUNT, headers=agent.headers), 403, "api_key_disabled")

    _set_status(app, agent.account_id, "active")

    response = client.get(ACCOUNT, headers=agent.headers)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "active"


# --- balance and funded ------------------------------------------------------------------


def test_operator_credit_shows_in_balance_but_is_not_real_money(app, client):
    agent = register(client)
    fund(app, agent.account_id, 1_500_000)

    body = client.get(ACCOUNT, headers=agent.headers).json()

    assert body["balance_micro"] == 1_500_000
    assert body["held_micro"] == 0
    assert body["reputation"]["funded"] is False


def test_real_money_marks_the_account_funded(app, client):
    agent = register(client)
    fund(app, agent.account_id, 1_500_000, real_money=True)

    body = client.get(ACCOUNT, headers=agent.headers).json()

    assert body["balance_micro"] == 1_500_000
    assert body["reputation"]["funded"] is True


def test_funding_one_account_does_not_touch_another(app, client):
    funded = register(client)
    other = register(client)
    fund(app, funded.account_id, 1_500_000, real_money=True)

    body = client.get(ACCOUNT, headers=other.headers).json()

    assert body["balance_micro"] == 0
    assert body["reputation"]["funded"] is False


# --- the key is stored only as a keyed hash ----------------------------------------------


def test_stored_key_hash_is_neither_the_key_nor_its_plain_sha256(app, client):
    agent = register(client)

    stored = _stored_hash(app, agent.account_id)

    assert stored != agent.api_key
    assert agent.api_key not in stored
    assert stored != hashlib.sha256(agent.api_key.encode()).hexdigest()
    assert stored.lower() != hashlib.sha256(agent.api_key.encode()).hexdigest()


def test_key_hash_depends_on_the_deployment_secret(app, client, make_app):
    agent = register(client)
    other_secret = make_app(key_hash_secret="another-deployment-secret-0123456789abcdef")

    # Same database, different secret: the stored hash no longer matches the key.
    with TestClient(other_secret, raise_server_exceptions=False) as other:
        assert_problem(other.get(ACCOUNT, headers=agent.headers), 401, "unauthorized")
    response = client.get(ACCOUNT, headers=agent.headers)
    assert response.status_code == 200, response.text
