"""The one authentication seam: resolve the Caller from whatever credential the request
carries. Today that is the x-api-key header; bearer sessions, agent OAuth tokens and x402
payments slot in here without touching routes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader
from sqlalchemy.orm import Session

from agent_broker.accounts import credentials
from agent_broker.accounts.models import Account
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import read_session, write_session
from agent_broker.problems import ApiKeyDisabled, Unauthorized

API_KEY_HEADER = "x-api-key"
# Declares the scheme in /openapi.json; resolution itself is done below.
api_key_scheme = APIKeyHeader(name=API_KEY_HEADER, auto_error=False)


@dataclass(frozen=True)
class Caller:
    account: Account  # loaded in the request's session; services reuse it
    via: str  # "api_key"

    @property
    def account_id(self) -> str:
        return self.account.id


def _resolve(request: Request, session: Session, presented: str | None) -> Caller:
    if not presented:
        raise Unauthorized()
    account = credentials.account_for_key(session, request.app.state.settings, presented)
    if account is None:
        raise Unauthorized("The API key is not recognised.")
    if account.status != "active":
        raise ApiKeyDisabled()
    return Caller(account=account, via="api_key")


@db_bound
def _caller_write(
    request: Request,
    session: Annotated[Session, Depends(write_session, scope="function")],
    presented: Annotated[str | None, Depends(api_key_scheme)],
) -> Caller:
    return _resolve(request, session, presented)


@db_bound
def _caller_read(
    request: Request,
    session: Annotated[Session, Depends(read_session, scope="function")],
    presented: Annotated[str | None, Depends(api_key_scheme)],
) -> Caller:
    return _resolve(request, session, presented)


# Use with WriteSession on routes that change state, ReadCaller with ReadSession otherwise.
CurrentCaller = Annotated[Caller, Depends(_caller_write)]
ReadCaller = Annotated[Caller, Depends(_caller_read)]
