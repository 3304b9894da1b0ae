"""What every tool shares with the REST routes: the caller resolved from its API key by
the same rule (agent_broker.auth.keys), one transaction per call run where the
database's work runs, the same Idempotency-Key records (same operation names and
fingerprints as over HTTP, so a retry is answered alike whichever way it comes), and
problems returned as MCP tool errors carrying the reason code."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, ParamSpec, TypeVar

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from agent_broker.accounts.caller import Caller
from agent_broker.accounts.models import AccountRecord
from agent_broker.auth.keys import key_caller
from agent_broker.db.dispatch import run
from agent_broker.db.session import transaction
from agent_broker.http.context import AppContext
from agent_broker.idempotency.service import IdempotencyKey, checked_key, fingerprint
from agent_broker.problems import InvalidInput, Problem, Unauthorized

P = ParamSpec("P")
T = TypeVar("T")


def caller_for(session: Session, context: AppContext, api_key: str | None) -> Caller:
    if not api_key:
        raise Unauthorized(
            "This tool needs the account's API key: the x-api-key header over HTTP, "
            "BROKER_API_KEY over stdio."
        )
    return key_caller(session, context.settings, api_key)


async def as_caller(
    context: AppContext,
    api_key: str | None,
    work: Callable[[Session, Caller], T],
    *,
    write: bool = False,
) -> T:
    """`work(session, caller)` in one transaction, committed when it returns."""

    def resolved(session: Session) -> T:
        return work(session, caller_for(session, context, api_key))

    async with transaction(context.db, write=write) as session:
        return await run(session, resolved, session)


async def in_transaction(
    context: AppContext, work: Callable[[Session], T], *, write: bool = False
) -> T:
    async with transaction(context.db, write=write) as session:
        return await run(session, work, session)


async def account_of(context: AppContext, api_key: str | None) -> AccountRecord:
    """The caller's row, read in a short transaction of its own (for a tool that then
    calls out to the network, like domain verify, holding nothing meanwhile)."""
    return await as_caller(context, api_key, lambda _session, caller: caller.account)


def idempotency(
    context: AppContext, raw_key: str | None, operation: str, path: dict[str, str], body: Any
) -> IdempotencyKey | None:
    """The key as the REST route would make it for the same call."""
    if raw_key is None:
        return None
    hours = context.settings.idempotency_retention_hours
    return IdempotencyKey(
        key=checked_key(raw_key),
        operation=operation,
        fingerprint=fingerprint(operation, {"path": path, "body": body}),
        retention=timedelta(hours=hours),
    )


M = TypeVar("M", bound=BaseModel)


def parsed(model: type[M], arguments: dict[str, Any]) -> M:
    """The REST route's request model, validated the same way (400 invalid_input)."""
    try:
        return model.model_validate({k: v for k, v in arguments.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        raise InvalidInput(f"Invalid field '{where}': {first['msg']}.") from None


def _tool_error(problem: Problem) -> CallToolResult:
    error = {
        "status": problem.status,
        "reason": problem.reason.value,
        "detail": problem.detail,
        **problem.extra,
    }
    body = {"error": error}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))],
        structured_content=body,
        is_error=True,
    )


def reasoned(tool: Callable[P, Awaitable[Any]]) -> Callable[P, Awaitable[Any]]:
    """A problem becomes an MCP tool error (isError) whose structured content is
    `{"error": {status, reason, detail, ...}}`, the problem document's members."""

    @functools.wraps(tool)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
        try:
            return await tool(*args, **kwargs)
        except Problem as problem:
            return _tool_error(problem)

    return wrapper
