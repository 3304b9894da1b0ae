"""POST /a2a: A2A 1.0 over JSON-RPC, built on the a2a-sdk. One skill, `onboarding`: every
SendMessage is answered with one message whose one text part is the guide of /llms.txt
(register, keep the key, contact and route, funding, buying versus selling, prices, and
where the machine-readable documents are). Marketplace actions stay REST (and MCP).

The SDK checks the A2A-Version header (absent means 0.3) only after it has routed the
method and parsed its parameters, so a 0.3 request would get "method not found" instead;
the dispatcher below answers every request that is not 1.x with VersionNotSupportedError
(-32009) first.

The route itself is declared with the other meta routes (agent_broker.meta.routes), so
/openapi.json lists it; the SDK still reads the body and writes every answer: a JSON-RPC
response with HTTP 200, errors included."""

from __future__ import annotations

from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.jsonrpc_models import JSONParseError
from a2a.server.request_handlers import DefaultRequestHandler, build_error_response
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore
from a2a.utils.constants import PROTOCOL_VERSION_0_3, VERSION_HEADER
from a2a.utils.errors import UnsupportedOperationError, VersionNotSupportedError
from packaging.version import InvalidVersion, Version
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agent_broker.meta.schemas import JsonRpcRequest

# How /openapi.json describes what FastAPI does not read itself: the version header and
# the JSON-RPC body.
OPENAPI_EXTRA: dict[str, Any] = {
    "parameters": [
        {
            "name": VERSION_HEADER,
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "example": "1.0",
            "description": "The A2A version spoken: 1.x is served; absent means 0.3, which "
            "is answered with error -32009 (version not supported), as is any other version",
        }
    ],
    "requestBody": {
        "required": True,
        "description": "A JSON-RPC 2.0 request (batches are not supported)",
        "content": {
            "application/json": {
                "schema": JsonRpcRequest.model_json_schema(),
                "example": {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": "m-1",
                            "role": "ROLE_USER",
                            "parts": [{"text": "How do I start trading here?"}],
                        }
                    },
                },
            }
        },
    },
}


class OnboardingExecutor(AgentExecutor):
    def __init__(self, guide: str) -> None:
        self.guide = guide

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        await event_queue.enqueue_event(new_text_message(self.guide, context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError(message="Onboarding replies are immediate; nothing runs.")


def _speaks_1_x(version: str) -> bool:
    try:
        return Version(version).major == 1
    except InvalidVersion:
        return False


async def _request_id(request: Request) -> Any:
    try:
        body = await request.json()
    except ValueError:
        return None
    found = body.get("id") if isinstance(body, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


class VersionFirstDispatcher(JsonRpcDispatcher):
    async def handle_requests(self, request: Request) -> Response:
        version = request.headers.get(VERSION_HEADER) or PROTOCOL_VERSION_0_3
        if _speaks_1_x(version):
            # A body the JSON parser refuses (not UTF-8, an integer of over 4,300 digits)
            # is a parse error (-32700); the library would answer it as its own fault.
            try:
                await request.json()
            except ValueError as error:
                refusal = JSONParseError(message=f"The body is not JSON: {error}"[:200])
                return JSONResponse(build_error_response(None, refusal))
            return await super().handle_requests(request)
        refusal = VersionNotSupportedError(
            message=f"A2A version '{version}' is not supported: send A2A-Version: 1.0."
        )
        return JSONResponse(build_error_response(await _request_id(request), refusal))


def a2a_dispatcher(card: dict[str, Any], guide: str) -> JsonRpcDispatcher:
    """What answers POST /a2a. Its handler is never closed: closing drains tasks still
    running, and an onboarding reply is immediate, so none ever is (and a closed handler
    refuses every later request, as a restarted app's would)."""
    handler = DefaultRequestHandler(
        agent_executor=OnboardingExecutor(guide),
        task_store=InMemoryTaskStore(),
        agent_card=parse_agent_card(card),
    )
    return VersionFirstDispatcher(request_handler=handler)
