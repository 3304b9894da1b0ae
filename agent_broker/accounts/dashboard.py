"""Operator self-service on the caller's own account (SPEC 4.7): disable and rotate the
API key. Both accept a dashboard session or the API key; a disabled account's key is
refused (403 api_key_disabled), so its operator rotates through a session."""

from __future__ import annotations

from typing import Annotated

from fastapi import Request
from pydantic import BaseModel, Field

from agent_broker.accounts import service
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import WriteSession
from agent_broker.http.auth import KEY_OR_SESSION, Caller, authenticated
from agent_broker.http.responses import problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/dashboard", tags=["dashboard"])
Operator = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, writes=True)]


class KeyDisabled(BaseModel):
    ok: bool = Field(description="True: the account is inactive and its key refused (403)")


class KeyRotated(BaseModel):
    api_key: str = Field(description="The new key, shown this once")
    key_preview: str


@router.post("/keys", response_model=KeyDisabled, responses=problems(401, 403, 409))
@db_bound
def disable_key(caller: Operator, session: WriteSession) -> dict:
    service.disable_key(session, caller.account_id)
    return {"ok": True}


@router.post("/keys/rotate", response_model=KeyRotated, responses=problems(401, 403, 409))
@db_bound
def rotate_key(request: Request, caller: Operator, session: WriteSession) -> dict:
    return service.rotate_key(session, request.app.state.settings, caller.account_id)
