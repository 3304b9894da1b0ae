"""One transaction per request: the dependency commits when the route returns and rolls
back when it raises, before the response leaves. Services only flush.

Opening a session does no I/O, so it happens on the event loop; the commit or rollback at
the end runs where the database's blocking work runs (agent_broker.db.dispatch)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database


def _finish(session: Session, succeeded: bool) -> None:
    try:
        if succeeded:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


async def _end(session: Session, succeeded: bool) -> None:
    await run(session, _finish, session, succeeded)


@asynccontextmanager
async def _transaction(factory: sessionmaker[Session]) -> AsyncIterator[Session]:
    # A context manager, not a nested generator: an exception thrown into the request's
    # dependency must reach this rollback at once, not when the generator is collected.
    session = factory()
    try:
        yield session
    except BaseException:
        await _end(session, False)
        raise
    await _end(session, True)


@asynccontextmanager
async def transaction(db: Database, *, write: bool) -> AsyncIterator[Session]:
    """One transaction, committed when the block ends and rolled back if it raises. Most
    routes get theirs from the dependencies below; a route that must make a network call
    opens its own on either side of it, holding neither a session nor the write gate
    while it waits on the network."""
    if write:
        async with db.session_slot(), db.write_gate(), _transaction(db.writer) as session:
            yield session
    else:
        async with db.session_slot(), _transaction(db.reader) as session:
            yield session


async def write_session(request: Request) -> AsyncIterator[Session]:
    async with transaction(request.app.state.db, write=True) as session:
        yield session


async def read_session(request: Request) -> AsyncIterator[Session]:
    async with transaction(request.app.state.db, write=False) as session:
        yield session


WriteSession = Annotated[Session, Depends(write_session, scope="function")]
ReadSession = Annotated[Session, Depends(read_session, scope="function")]
