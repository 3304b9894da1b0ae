"""Idempotency-Key as a mechanism any route can use.

The key is scoped to the caller and the route. The first request claims the key by
inserting its record inside the request's own transaction, so the record and the effect
commit together, and a refusal (which rolls back) leaves the key free for a corrected
retry. A concurrent duplicate blocks on the unique index until the first commits, then
replays its response; the effect happens once."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.http.models import IdempotencyRecord
from agent_broker.problems import IdempotencyKeyReuse, InvalidInput

HEADER = "Idempotency-Key"

# What a route computes: status code and JSON body.
Outcome = tuple[int, Any]


@dataclass(frozen=True)
class IdempotencyContext:
    key: str | None
    route: str
    request_hash: str
    retention: timedelta

    def run(
        self,
        session: Session,
        scope: str,
        compute: Callable[[], Outcome],
        *,
        stored: Callable[[Any], Any] = lambda body: body,
        replayed: Callable[[int, Any], Outcome] = lambda status, body: (status, body),
    ) -> JSONResponse:
        """Compute once per key; later identical requests get the first response.

        `stored` chooses what of the body is kept (never a secret), `replayed` how a kept
        response is answered again."""
        if self.key is None:
            return JSONResponse(*_swap(compute()))
        record = self._claimed(session, scope)
        if record is not None:
            return JSONResponse(*_swap(self._replay(record, replayed)))
        now = clock.now()
        claim = IdempotencyRecord(
            scope=scope,
            route=self.route,
            key=self.key,
            request_hash=self.request_hash,
            response_status=0,
            response_body="",
            created_at=now,
        )
        try:
            with session.begin_nested():
                session.add(claim)
                session.flush()
        except IntegrityError:
            # A concurrent request with this key committed first: answer as it did.
            record = self._claimed(session, scope)
            if record is None:
                raise
            return JSONResponse(*_swap(self._replay(record, replayed)))
        status, body = compute()
        claim.response_status = status
        claim.response_body = json.dumps(stored(body), separators=(",", ":"))
        session.flush()
        return JSONResponse(body, status_code=status)

    def _claimed(self, session: Session, scope: str) -> IdempotencyRecord | None:
        record = session.scalars(
            select(IdempotencyRecord)
            .where(
                IdempotencyRecord.scope == scope,
                IdempotencyRecord.route == self.route,
                IdempotencyRecord.key == self.key,
            )
            .execution_options(populate_existing=True)
        ).one_or_none()
        if record is not None and record.created_at <= clock.now() - self.retention:
            # Past retention the key is forgotten and may be used afresh.
            session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.id == record.id))
            session.flush()
            return None
        return record

    def _replay(
        self, record: IdempotencyRecord, replayed: Callable[[int, Any], Outcome]
    ) -> Outcome:
        if record.request_hash != self.request_hash:
            raise IdempotencyKeyReuse()
        return replayed(record.response_status, json.loads(record.response_body))


def _swap(outcome: Outcome) -> tuple[Any, int]:
    status, body = outcome
    return body, status


def _canonical_body(raw: bytes) -> bytes:
    if not raw:
        return b""
    try:
        return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        return raw


async def _context(request: Request, raw_key: str | None) -> IdempotencyContext:
    key: str | None = None
    if raw_key is not None:
        try:
            key = str(uuid.UUID(raw_key.strip()))
        except ValueError:
            raise InvalidInput(f"The {HEADER} header must be a UUID.") from None
    route = request.scope.get("route")
    template = getattr(route, "path", request.url.path)
    digest = hashlib.sha256()
    for part in (
        request.method.encode(),
        request.url.path.encode(),
        _canonical_body(await request.body()),
    ):
        digest.update(part)
        digest.update(b"\x00")
    hours = request.app.state.settings.idempotency_retention_hours
    return IdempotencyContext(
        key=key,
        route=f"{request.method} {template}",
        request_hash=digest.hexdigest(),
        retention=timedelta(hours=hours),
    )


_DESCRIPTION = "A UUID; retries with the same key and request return the first response."


async def _optional(
    request: Request,
    key: Annotated[str | None, Header(alias=HEADER, description=_DESCRIPTION)] = None,
) -> IdempotencyContext:
    return await _context(request, key)


async def _required(
    request: Request, key: Annotated[str, Header(alias=HEADER, description=_DESCRIPTION)]
) -> IdempotencyContext:
    return await _context(request, key)


OptionalIdempotency = Annotated[IdempotencyContext, Depends(_optional)]
RequiredIdempotency = Annotated[IdempotencyContext, Depends(_required)]


def purge_expired(session: Session, retention_hours: int) -> int:
    cutoff = clock.now() - timedelta(hours=retention_hours)
    result = session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at <= cutoff)
    )
    return result.rowcount or 0
