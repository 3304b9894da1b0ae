"""/openapi.json tells agent developers the statuses they will really meet."""

from __future__ import annotations

import re

from tests.support.accounts import register


def test_request_validation_is_declared_as_400_never_the_frameworks_422(client):
    doc = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            # A 422 left is one of ours (contact_leak, prompt_injection): a problem document.
            declared = str(operation["responses"].get("422", "ProblemDetail"))
            assert "ProblemDetail" in declared, (method, path)
    listing = doc["paths"]["/v1/listings/{listing_id}"]["get"]["responses"]
    assert "422" not in listing
    # A body or query that fails validation answers 400 invalid_input (tested in
    # tests/test_problems.py); the document says so.
    feed = doc["paths"]["/v1/feed"]["get"]["responses"]
    assert "400" in feed
    rating = doc["paths"]["/v1/deals/{deal_id}/ratings"]["post"]["responses"]
    assert rating["400"]["content"]["application/problem+json"]["schema"]["$ref"].endswith(
        "/ProblemDetail"
    )


def test_a_malformed_query_really_answers_400(client):
    agent = register(client)
    response = client.get("/v1/feed?limit=abc", headers=agent.headers)
    assert response.status_code == 400
    assert response.json()["reason"] == "invalid_input"


def test_every_reference_in_the_document_resolves(client):
    doc = client.get("/openapi.json").json()
    text = str(doc)
    for name in set(re.findall(r"#/components/schemas/([A-Za-z0-9_.-]+)", text)):
        assert name in doc["components"]["schemas"], name


def test_pack_count_declares_its_bounds_and_each_processors(client):
    doc = client.get("/openapi.json").json()
    request = doc["paths"]["/dashboard/credits"]["post"]["requestBody"]
    assert request["content"]["application/json"]["schema"]["$ref"].endswith(
        "/CreateInvoiceRequest"
    )
    pack_count = doc["components"]["schemas"]["CreateInvoiceRequest"]["properties"]["pack_count"]
    assert (pack_count["type"], pack_count["minimum"], pack_count["maximum"]) == ("integer", 1, 200)
    assert "1 to 10 for processor_a" in pack_count["description"]
    assert "1 to 200 for processor_b" in pack_count["description"]


def test_a_pack_count_outside_the_declared_bounds_is_refused(client):
    agent = register(client)
    for packs in (0, 201):
        response = client.post(
            "/dashboard/credits", json={"pack_count": packs}, headers=agent.headers
        )
        assert response.status_code == 400, response.text
        assert response.json()["reason"] == "invalid_input"


def test_the_a2a_endpoint_is_documented_as_json_rpc(client):
    doc = client.get("/openapi.json").json()
    operation = doc["paths"]["/a2a"]["post"]
    assert "security" not in operation  # no key: onboarding is open to anyone
    (header,) = operation["parameters"]
    assert (header["name"], header["in"], header["required"]) == ("A2A-Version", "header", False)
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["jsonrpc"]["const"] == "2.0"
    assert set(body["required"]) == {"jsonrpc", "method"}
    assert "SendMessage" in body["properties"]["method"]["enum"]
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    answer = doc["components"]["schemas"][ok.rsplit("/", 1)[1]]
    assert set(answer["required"]) == {"jsonrpc", "id"}
    assert {"result", "error"} <= set(answer["properties"])
    error = doc["components"]["schemas"]["JsonRpcError"]
    assert set(error["required"]) == {"code", "message"}
