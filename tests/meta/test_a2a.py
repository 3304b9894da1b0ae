"""POST /a2a speaks A2A 1.0 JSON-RPC through the a2a-sdk: the SDK's own client, found
from the signed card, gets the onboarding guide as one text message; the other 1.0
methods answer as the protocol says; anything that is not 1.x (no A2A-Version header
means 0.3) is refused with VersionNotSupportedError, -32009."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from a2a.utils.errors import TaskNotFoundError
from fastapi.testclient import TestClient

from tests.support.settings import PUBLIC_BASE_URL as BASE


def _ask(text: str = "How do I start trading here?") -> SendMessageRequest:
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    return SendMessageRequest(message=message)


async def _with_client(app, work):  # type: ignore[no-untyped-def]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        client = await create_client(BASE, client_config=ClientConfig(httpx_client=http))
        try:
            return await work(client)
        finally:
            await client.close()


def test_the_sdk_client_finds_the_agent_from_its_card_and_is_onboarded(app):
    async def work(client):  # type: ignore[no-untyped-def]
        return [event async for event in client.send_message(_ask())]

    (event,) = asyncio.run(_with_client(app, work))
    assert event.WhichOneof("payload") == "message"
    assert len(event.message.parts) == 1
    guide = get_message_text(event.message)
    for needle in (
        "/v1/account/register",  # register
        "api_key",  # keep the key
        "/v1/account/contact",  # contact and route
        "/v1/account/route",
        "/v1/account/domain/verify",  # funding: the domain grant
        "/dashboard/credits",  # invoices
        "`sell` listing",  # buy versus sell
        "## Prices",
        "/openapi.json",
        "/llms-full.txt",
    ):
        assert needle in guide, needle


def test_the_task_methods_answer_as_the_protocol_says(app):
    async def work(client):  # type: ignore[no-untyped-def]
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        with pytest.raises(TaskNotFoundError):
            await client.cancel_task(CancelTaskRequest(id="no-such-task"))
        return await client.list_tasks(ListTasksRequest())

    listed = asyncio.run(_with_client(app, work))
    assert list(listed.tasks) == []  # onboarding replies are messages, never tasks


def _rpc(client: TestClient, method: str, params: dict, **headers: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = client.post("/a2a", json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["id"] == 7 and answer["jsonrpc"] == "2.0"
    return answer


SEND = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}
V1 = {"A2A-Version": "1.0"}


def test_send_message_over_plain_json_rpc(client):
    answer = _rpc(client, "SendMessage", SEND, **V1)
    (part,) = answer["result"]["message"]["parts"]
    assert answer["result"]["message"]["role"] == "ROLE_AGENT"
    assert "/v1/account/register" in part["text"]


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("SendStreamingMessage", SEND, -32004),  # the card says streaming: false
        ("SubscribeToTask", {"id": "t-1"}, -32004),
        ("GetExtendedAgentCard", {}, -32004),  # extendedAgentCard: false
        ("CreateTaskPushNotificationConfig", {"taskId": "t-1", "url": "https://x.example"}, -32003),
        ("NoSuchMethod", {}, -32601),
    ],
)
def test_unsupported_operations_are_json_rpc_errors(client, method, params, code):
    assert _rpc(client, method, params, **V1)["error"]["code"] == code


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("SendMessage", {}),  # no header: 0.3
        ("message/send", {}),  # the 0.3 method name
        ("SendMessage", {"A2A-Version": "0.3"}),
        ("SendMessage", {"A2A-Version": "2.0"}),
        ("SendMessage", {"A2A-Version": "latest"}),
    ],
)
def test_anything_but_1_x_is_version_not_supported(client, method, headers):
    error = _rpc(client, method, SEND, **headers)["error"]
    assert error["code"] == -32009
    assert "1.0" in error["message"]


def test_a_1_x_minor_version_is_served(client):
    assert "result" in _rpc(client, "SendMessage", SEND, **{"A2A-Version": "1.1"})


def test_the_a2a_health_answers_like_health(client):
    assert client.get("/a2a/health").json() == client.get("/health").json()


def test_the_endpoint_survives_a_restart_of_the_app(app):
    for _ in range(2):
        with TestClient(app) as client:
            assert "result" in _rpc(client, "SendMessage", SEND, **V1)


@pytest.mark.parametrize(
    "body",
    [b"\xff", b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000 + b', "method": "SendMessage"}', b"{"],
    ids=["not-utf-8", "a-5000-digit-id", "truncated"],
)
def test_a_body_that_is_not_json_is_a_parse_error(client, body):
    response = client.post("/a2a", content=body, headers={"content-type": "application/json", **V1})
    assert response.status_code == 200
    answer = response.json()
    assert answer["error"]["code"] == -32700 and answer["id"] is None
