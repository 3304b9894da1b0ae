from __future__ import annotations

import io
import json
import logging
import re

import structlog
import uvicorn
from fastapi.testclient import TestClient

from agent_broker.http.request_id import accepted_request_id
from agent_broker.logging import REDACTED, configure, json_formatter
from tests.support.accounts import register


def _route_that_logs(app) -> None:
    # A plain `def` route runs in the thread pool: the request id must follow it there.
    @app.get("/test-only/log")
    def _log() -> dict:
        structlog.get_logger("tests.inside").info("inside_route", detail="hello")
        logging.getLogger("tests.stdlib").warning("a library line")
        return {}


def test_every_line_of_a_request_carries_its_request_id(app, client, logs):
    _route_that_logs(app)
    response = client.get("/test-only/log")
    assert response.status_code == 200
    request_id = response.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    [inside] = logs.events("inside_route")
    assert inside["request_id"] == request_id
    assert inside["logger"] == "tests.inside"
    [library] = logs.events("a library line")
    assert library["request_id"] == request_id
    assert library["level"] == "warning"
    [access] = logs.events("request")
    assert access["request_id"] == request_id
    assert access["method"] == "GET"
    assert access["route"] == "/test-only/log"
    assert access["status"] == 200
    assert isinstance(access["duration_ms"], float | int)
    # Another request gets another id.
    assert client.get("/test-only/log").headers["X-Request-ID"] != request_id


def test_every_log_line_is_one_json_object(app, client, logs):
    client.get("/health")
    client.get("/v1/nothing-here")
    assert logs.text.strip()
    assert len(logs.lines()) == len(logs.text.strip().splitlines())
    for line in logs.lines():
        assert {"event", "level", "timestamp", "logger"} <= set(line)


def test_the_access_line_names_the_route_template_not_the_path(client, logs):
    client.get("/v1/listings/1234abcd-secret-looking-id?api_key=hunter2")
    client.get("/v1/nowhere/at/all?token=hunter2")
    first, second = logs.events("request")
    assert first["route"] == "/v1/listings/{listing_id}"
    assert second["route"] == "unmatched"
    assert second["status"] == 404
    assert "hunter2" not in logs.text
    assert "1234abcd" not in logs.text


def test_a_safe_incoming_request_id_is_kept_an_unsafe_one_replaced(client, logs):
    kept = client.get("/health", headers={"X-Request-ID": "c0ffee00-1234-4abc-9def-0123456789ab"})
    assert kept.headers["X-Request-ID"] == "c0ffee00-1234-4abc-9def-0123456789ab"
    for unsafe in ("short", "has space in it", "x" * 65, "ab_live_0123456789abcdef", "abc/defgh"):
        response = client.get("/health", headers={"X-Request-ID": unsafe})
        assert response.headers["X-Request-ID"] != unsafe
        assert re.fullmatch(r"[0-9a-f]{32}", response.headers["X-Request-ID"])
    ids = [line["request_id"] for line in logs.events("request")]
    assert ids[0] == "c0ffee00-1234-4abc-9def-0123456789ab"
    assert "ab_live_0123456789abcdef" not in logs.text
    assert accepted_request_id(None) is None


def test_an_api_key_never_reaches_the_logs(app, client, logs):
    agent = register(client)
    assert client.get("/v1/account", headers=agent.headers).status_code == 200
    client.get("/v1/account", headers={"x-api-key": agent.api_key + "0"})  # 401
    client.get("/v1/account", headers={"Authorization": f"Bearer {agent.api_key}"})
    client.get(f"/v1/account?api_key={agent.api_key}")
    client.get("/health", headers={"X-Request-ID": agent.api_key})
    client.post(
        "/v1/listings",
        headers=agent.headers,
        json={"title": agent.api_key, "body": agent.api_key, "category": "research"},
    )
    assert len(logs.events("request")) >= 6
    assert agent.api_key not in logs.text
    assert agent.api_key[8:] not in logs.text  # not even the random part


def test_fields_named_like_credentials_are_redacted(client, logs):
    structlog.get_logger("tests").info("careless", api_key="ab_live_x", authorization="Bearer y")
    [line] = logs.events("careless")
    assert line["api_key"] == REDACTED
    assert line["authorization"] == REDACTED


def test_a_crash_is_answered_with_the_request_id_and_logged_under_it(app, logs):
    @app.get("/test-only/crash")
    def _crash() -> dict:
        raise RuntimeError("boom with a secret ab_live_deadbeef")

    # The error does not reach the server (which would log its message): the test client
    # raises what reaches it, and here nothing does.
    with TestClient(app) as client:
        response = client.get("/test-only/crash")
    assert response.status_code == 500
    request_id = response.headers["X-Request-ID"]
    [crash] = logs.events("unhandled_exception")
    assert crash["request_id"] == request_id
    [stack] = logs.events("unhandled_exception_stack")
    assert stack["request_id"] == request_id and stack["error_type"] == "RuntimeError"
    assert any(frame.endswith(" in _crash") for frame in stack["stack"])
    assert "ab_live_deadbeef" not in logs.text
    [access] = logs.events("request")
    assert access["status"] == 500 and access["request_id"] == request_id


def test_uvicorn_logs_through_ours_and_its_own_access_log_stays_off():
    # What `agent-broker serve` does: uvicorn installs its logging, then the app starts.
    uvicorn.Config("agent_broker.app:app_factory", factory=True, access_log=False)
    configure("INFO")
    access = logging.getLogger("uvicorn.access")
    # uvicorn writes access lines (raw path and query string) only when this has handlers.
    assert not access.hasHandlers()
    error = logging.getLogger("uvicorn.error")
    assert not error.handlers and error.propagate
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(json_formatter())
    logging.getLogger().addHandler(handler)
    try:
        error.info("Started server process [%d]", 42, extra={"color_message": "\x1b[36m"})
    finally:
        logging.getLogger().removeHandler(handler)
    line = json.loads(stream.getvalue())
    assert line["event"] == "Started server process [42]"
    assert line["logger"] == "uvicorn.error"
    assert "color_message" not in line


def test_logging_writes_to_the_standard_error_of_the_moment(monkeypatch, capsys):
    # A command run in-process swaps standard error for a buffer and closes it afterwards
    # (click's CliRunner): lines logged later go to the standard error then in place.
    swapped = io.StringIO()
    monkeypatch.setattr("sys.stderr", swapped)
    configure("INFO")
    structlog.get_logger("tests.swap").info("while_swapped")
    swapped.close()
    monkeypatch.undo()
    structlog.get_logger("tests.swap").info("after_swap")
    err = capsys.readouterr().err
    assert "Logging error" not in err
    assert [json.loads(line)["event"] for line in err.splitlines()] == ["after_swap"]
