"""Request bodies are read whole, bounded in size and time, before any database work; NUL
characters and over-deep JSON are 400 invalid_input; a client trickling its body delays
no other writer."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest

from tests.support.accounts import fund
from tests.support.http import assert_problem, new_key, serving
from tests.support.market import FEE, LISTING, post


def test_a_declared_length_over_the_limit_is_413_before_reading(make_app):
    from fastapi.testclient import TestClient

    app = make_app(max_body_bytes=2048)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post(
            "/v1/account/register",
            content=b'{"accepted_terms": true, "pad": "' + b"x" * 4096 + b'"}',
            headers={"content-type": "application/json"},
        )
        body = assert_problem(response, 413, "invalid_input")
        assert "2048 bytes" in body["detail"]
        assert response.headers.get("connection") == "close"


def test_a_streamed_body_over_the_limit_is_413(make_app):
    from fastapi.testclient import TestClient

    app = make_app(max_body_bytes=2048)

    def chunks():
        for _ in range(8):
            yield b"x" * 512

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/v1/account/register", content=chunks())
        assert_problem(response, 413, "invalid_input")


def post_raw(client, seller, raw: str | bytes):  # noqa: ANN001, ANN201
    """POST /v1/listings with `raw` as the JSON body, exactly as given."""
    return client.post(
        "/v1/listings",
        content=raw.encode() if isinstance(raw, str) else raw,
        headers={
            **seller.headers,
            "Idempotency-Key": new_key(),
            "content-type": "application/json",
        },
    )


def test_the_default_limit_admits_the_largest_valid_listing(client, seller):
    # Every character outside the BMP, sent JSON-escaped as a surrogate pair (12 bytes).
    raw = json.dumps(
        {**LISTING, "title": "\U0010fffd" * 200, "body": "\U0001f600" * 10_000},
        ensure_ascii=True,
    ).encode()
    assert len(raw) > 120_000
    response = post_raw(client, seller, raw)
    assert response.status_code == 201, response.text


def test_operations_with_a_body_declare_408_and_413(client):
    document = client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            declared = set(operation["responses"])
            if "requestBody" in operation:
                assert {"408", "413"} <= declared, (method, path)


@pytest.mark.parametrize(
    "text",
    ["title\u0000here", "\u0000", "a\u0000"],
)
def test_a_nul_in_a_json_string_is_400(client, seller, text):
    response = post(client, seller, title=text)
    assert_problem(response, 400, "invalid_input")
    # Nothing was charged for the refused post.
    account = client.get("/v1/account", headers=seller.headers).json()
    assert account["balance_micro"] == 100 * FEE


def test_an_escaped_backslash_before_u0000_is_plain_text(client, seller):
    # JSON `\\u0000` is a backslash followed by the text "u0000", not a NUL.
    response = post(client, seller, title="a\\u0000b")
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "a\\u0000b"


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "a\\ud83d", "\\ude00\\ud83d"])
def test_a_lone_surrogate_in_a_json_string_is_400_and_not_charged(client, seller, escape):
    raw = json.dumps({**LISTING, "title": "TITLE"}).replace("TITLE", escape)
    response = post_raw(client, seller, raw)
    assert_problem(response, 400, "invalid_input")
    assert "surrogate" in response.json()["detail"]
    assert client.get("/v1/account", headers=seller.headers).json()["balance_micro"] == 100 * FEE


def test_a_lone_surrogate_is_400_where_it_would_be_echoed_or_stored(client):
    # A JSON-RPC id is echoed in the answer; a processor's invoice id is looked up.
    for path, raw in (
        ("/a2a", b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "SendMessage", "params": {}}'),
        ("/webhooks/processor-a", b'{"id": "\\ud800", "status": "paid"}'),
    ):
        response = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert_problem(response, 400, "invalid_input")


def test_escaped_surrogate_pairs_are_text_like_any_other(client, seller):
    # Clients that escape every non-ASCII character send an emoji as a pair of escapes.
    raw = json.dumps({**LISTING, "title": "launch \U0001f680 now"})
    assert "\\ud83d\\ude80" in raw
    response = post_raw(client, seller, raw)
    assert response.status_code == 201, response.text
    assert response.json()["title"] == "launch \U0001f680 now"


def test_a_nul_in_the_query_or_path_is_400(client, seller):
    assert_problem(
        client.get("/v1/feed?category=re%00search", headers=seller.headers), 400, "invalid_input"
    )
    assert_problem(
        client.get("/v1/listings/abc%00def", headers=seller.headers), 400, "invalid_input"
    )
    assert_problem(client.get("/v1/reputation/abc%00def"), 400, "invalid_input")


def test_over_deep_json_is_400_and_not_charged(client, seller):
    nested = "[" * 5000 + "]" * 5000
    raw = json.dumps({**LISTING, "title": "deep"})[:-1] + ', "extra": ' + nested + "}"
    response = post_raw(client, seller, raw)
    assert_problem(response, 400, "invalid_input")
    assert client.get("/v1/account", headers=seller.headers).json()["balance_micro"] == 100 * FEE
    # A route that ignores its body still fingerprints it for Idempotency-Key.
    response = client.post(
        "/v1/threads/00000000-0000-0000-0000-000000000000/close",
        content=nested.encode(),
        headers={**seller.headers, "Idempotency-Key": new_key()},
    )
    assert_problem(response, 400, "invalid_input")


def test_brackets_inside_strings_do_not_count_as_nesting(client, seller):
    response = post(client, seller, body="[[[{{{" * 200)
    assert response.status_code == 201, response.text


@pytest.fixture
def slow_app(make_app):
    return make_app(body_timeout_seconds=3)


@pytest.fixture
def slow_server(slow_app):
    with serving(slow_app) as served:
        yield served


def _read_until_closed(connection: socket.socket) -> bytes:
    """The whole answer of a server that closes the connection after it: the head and the
    body may arrive in separate reads (a reset, for bytes still trickling in, ends it too)."""
    chunks = []
    try:
        while chunk := connection.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def test_a_trickling_client_delays_no_other_writer(slow_app, slow_server):
    base, port = slow_server
    with httpx.Client(base_url=base, timeout=10) as http:
        agents = []
        for _ in range(2):
            made = http.post("/v1/account/register", json={"accepted_terms": True}).json()
            fund(slow_app, made["account_id"], 50_000_000, real_money=True)
            agents.append({"x-api-key": made["api_key"]})
        slow_key, fast_key = agents

        # Headers of a finalize-sized write, then the body one byte a second.
        payload = json.dumps(LISTING).encode()
        trickler = socket.create_connection(("127.0.0.1", port))
        trickler.sendall(
            b"POST /v1/listings HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"x-api-key: {slow_key['x-api-key']}\r\n".encode()
            + f"Idempotency-Key: {new_key()}\r\n".encode()
            + b"content-type: application/json\r\n"
            + f"content-length: {len(payload)}\r\n\r\n".encode()
        )
        stop = threading.Event()

        def trickle() -> None:
            for byte in payload:
                if stop.wait(1.0):
                    return
                try:
                    trickler.sendall(bytes([byte]))
                except OSError:
                    return

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        time.sleep(0.3)
        try:
            # Other writers go through at once while the trickle is under way.
            for _ in range(5):
                started = time.monotonic()
                response = http.post(
                    "/v1/listings",
                    json=LISTING,
                    headers={**fast_key, "Idempotency-Key": new_key()},
                )
                assert response.status_code == 201, response.text
                assert time.monotonic() - started < 1.0
            # The trickler gets 408 once its body is overdue, and nothing was written. It
            # stops sending first, so the server closes on a read connection (a reset could
            # drop the answer's body before it is read).
            stop.set()
            sender.join()
            trickler.settimeout(10)
            answer = _read_until_closed(trickler).decode("latin-1")
            assert answer.startswith("HTTP/1.1 408"), answer[:200]
            assert "invalid_input" in answer
        finally:
            stop.set()
            trickler.close()
        listings = http.get("/v1/feed", headers=slow_key).json()["listings"]
        assert len(listings) == 5
