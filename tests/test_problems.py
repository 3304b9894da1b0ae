from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field

from agent_broker.problems import Problem, Reason
from tests.support.http import assert_problem

SECTION_7_REASONS = [
    "unauthorized",
    "insufficient_funds_self",
    "held_funds_mismatch",
    "forbidden",
    "api_key_disabled",
    "not_found",
    "identity_conflict",
    "out_of_turn",
    "already_finalized",
    "duplicate_rating",
    "duplicate_dispute",
    "idempotency_key_reuse",
    "self_listing_negotiation",
    "hold_not_capturable",
    "missing_deal_route_self",
    "missing_deal_route_counterparty",
    "account_has_escrow",
    "listing_conflict",
    "invoice_already_consumed",
    "invoice_conflict",
    "x402_payment_replay",
    "oauth_token_replay",
    "listing_cap_reached",
    "grant_cap_reached",
    "listing_expired",
    "thread_auto_closed",
    "deal_purged",
    "contact_leak",
    "prompt_injection",
    "invalid_input",
    "terms_required",
    "profile_incomplete_self",
    "profile_incomplete_counterparty",
    "too_many_violations",
    "rate_limited",
    "a2a_version_not_supported",
    "internal_error",
    "processor_unavailable",
    "certification_domain_unverified",
    "certification_unfunded",
    "certification_test_required",
]


class Probe(BaseModel):
    count: int = Field(ge=1)
    label: str


@pytest.fixture
def app(make_app) -> FastAPI:
    app = make_app()

    @app.post("/test/validate")
    def validate(body: Probe) -> dict:
        return {"ok": True}

    @app.get("/test/crash")
    def crash() -> dict:
        raise RuntimeError("secret-internal-detail at /srv/app.py line 12")

    @app.get("/test/conflict")
    def conflict() -> dict:
        raise Problem("Listing changed.", status=409, reason=Reason.listing_conflict)

    return app


def test_every_reason_code_of_the_spec_is_in_one_enum():
    assert sorted(r.value for r in Reason) == sorted(SECTION_7_REASONS)


def test_validation_failures_are_400_invalid_input_naming_the_field(client):
    body = assert_problem(
        client.post("/test/validate", json={"count": 0, "label": "x"}), 400, "invalid_input"
    )
    assert "count" in body["detail"]
    assert body["errors"][0]["field"] == "count"
    body = assert_problem(client.post("/test/validate", json={"count": 2}), 400, "invalid_input")
    assert "label" in body["detail"]


def test_malformed_json_is_400_invalid_input(client):
    body = assert_problem(
        client.post(
            "/test/validate", content=b'{"count": ', headers={"content-type": "application/json"}
        ),
        400,
        "invalid_input",
    )
    assert "JSON" in body["detail"]


def test_problem_fields_follow_rfc_9457(client):
    body = assert_problem(client.get("/test/conflict"), 409, "listing_conflict")
    assert body == {
        "type": "https://broker.test/problems/listing_conflict",
        "title": "Conflict",
        "status": 409,
        "detail": "Listing changed.",
        "reason": "listing_conflict",
    }


def test_unexpected_errors_are_500_internal_error_without_internals(app):
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/test/crash")
    body = assert_problem(response, 500, "internal_error")
    assert "secret-internal-detail" not in response.text
    assert "RuntimeError" not in response.text
    assert body["title"] == "Internal Server Error"


def test_wrong_method_is_a_problem_document(client):
    response = client.delete("/health")
    assert_problem(response, 405, "invalid_input")
    assert "GET" in response.headers["allow"]
