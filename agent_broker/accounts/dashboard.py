"""Operator self-service on the caller's own account (docs/interface.md §18): disable and rotate the
API key, list and remove the identities linked to the account. Each accepts a dashboard
session or the API key; a disabled account's key is refused (403 api_key_disabled), so its
operator rotates through a session."""

from __future__ import annotations

from typing import Annotated

from fastapi import Request, Response
from pydantic import BaseModel, Field

from agent_broker.accounts import identities, service
from agent_broker.accounts.caller import Caller, CredentialKind
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession, WriteSession
from agent_broker.http.context import context_of
from agent_broker.http.policy import KEY_OR_SESSION, authenticated
from agent_broker.http.responses import Timestamp, Uuid, problems
from agent_broker.http.routing import broker_router

router = broker_router(prefix="/dashboard", tags=["dashboard"])
Viewer = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION)]
Operator = Annotated[Caller, authenticated(kinds=KEY_OR_SESSION, writes=True)]


class KeyDisabled(BaseModel):
    ok: bool = Field(description="True: the account is inactive and its key refused (403)")


class KeyRotated(BaseModel):
    api_key: str = Field(description="The new key, shown this once")
    key_preview: str


class IdentityOut(BaseModel):
    id: Uuid
    kind: identities.Kind = Field(
        description="session: a dashboard session's identity (and any issuer no setting "
        "names); oauth: an agent OAuth token's; wallet: an x402 paying wallet's"
    )
    issuer: str
    subject: str = Field(description="The token's sub, or the wallet's lower-case address")
    linked_at: Timestamp


class IdentitiesOut(BaseModel):
    identities: list[IdentityOut] = Field(description="Oldest first")


@router.post("/keys", response_model=KeyDisabled, responses=problems(401, 403, 409))
@db_bound
def disable_key(caller: Operator, session: WriteSession) -> dict:
    service.disable_key(session, caller.account_id)
    return {"ok": True}


@router.post("/keys/rotate", response_model=KeyRotated, responses=problems(401, 403, 409))
@db_bound
def rotate_key(request: Request, caller: Operator, session: WriteSession) -> dict:
    # Made with a session, the rotation keeps that session's link; every other session and
    # OAuth link goes with the old key.
    kept = caller.identity if caller.via is CredentialKind.session else None
    return service.rotate_key(
        session, context_of(request).settings, caller.account_id, keep_identity=kept
    )


@router.get("/identities", response_model=IdentitiesOut, responses=problems(401, 403))
@db_bound
def list_identities(request: Request, caller: Viewer, session: ReadSession) -> dict:
    settings = context_of(request).settings
    return {"identities": identities.links_of(session, settings, caller.account_id)}


@router.delete(
    "/identities/{link_id}",
    status_code=204,
    response_class=Response,
    responses=problems(401, 403, 404),
)
@db_bound
def delete_identity(link_id: str, caller: Operator, session: WriteSession) -> Response:
    # A session may remove its own link: that call is then its last (401 after).
    identities.unlink(session, caller.account_id, link_id)
    return Response(status_code=204)
