import re

from tests.support.http import assert_problem


def test_health_reports_a_twelve_hex_build(client):
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert re.fullmatch(r"[0-9a-f]{12}", body["build"])


def test_version_is_the_release_tag(client):
    assert re.fullmatch(r"v\d+\.\d+\.\d+", client.get("/version").json()["version"])


def test_unknown_route_is_a_not_found_problem(client):
    assert_problem(client.get("/v1/nothing-here"), 404, "not_found")


def test_openapi_describes_every_route_with_models(client):
    spec = client.get("/openapi.json").json()
    assert "/v1/account/register" in spec["paths"]
    account = spec["paths"]["/v1/account"]["get"]["responses"]["200"]
    assert account["content"]["application/json"]["schema"]["$ref"].endswith("/AccountOut")
    assert "401" in spec["paths"]["/v1/account"]["get"]["responses"]
