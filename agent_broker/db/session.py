"""One transaction per request: the dependency commits when the route returns and rolls
back when it raises, before the response leaves. Services only flush.

Opening a session does no I/O, so it happens on the event loop; only the commit or
rollback at the end goes to the thread pool, in one hop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool


def _finish(session: Session, succeeded: bool) -> None:
    try:
        if succeeded:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


async def _transaction(factory: sessionmaker[Session]) -> AsyncIterator[Session]:
    session = factory()
    try:
        yield session
    except BaseException:
        await run_in_threadpool(_finish, session, False)
        raise
    await run_in_threadpool(_finish, session, True)


async def write_session(request: Request) -> AsyncIterator[Session]:
    async for session in _transaction(request.app.state.db.writer):
        yield session


async def read_session(request: Request) -> AsyncIterator[Session]:
    async for session in _transaction(request.app.state.db.reader):
        yield session


WriteSession = Annotated[Session, Depends(write_session, scope="function")]
ReadSession = Annotated[Session, Depends(read_session, scope="function")]
