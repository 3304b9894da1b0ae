"""One transaction per request: it commits when the route returns and rolls back when it
raises, before the response leaves. Services only flush.

Opening a session does no I/O, so it happens on the event loop; the commit or rollback at
the end runs where the database's blocking work runs (agent_broker.db.dispatch)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
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


class RequestTransactions:
    """A request's transactions: each opens when the route's dependencies first ask for it
    (after the ones that may call out to the network, which come first), and all of them
    end when the route's handler has built its answer, before it is sent: committed if the
    handler returned, rolled back if it raised (agent_broker.http.routing.BrokerRoute).

    Plain dependencies rather than ones with yield: FastAPI's exit machinery for those cost
    more per request than the transaction itself (make bench)."""

    __slots__ = ("db", "_open")

    def __init__(self, db: Database) -> None:
        self.db = db
        self._open: list[tuple[bool, Session, AbstractAsyncContextManager[Session]]] = []

    async def session(self, *, write: bool) -> Session:
        for writes, session, _ in self._open:
            if writes is write:
                return session
        manager = transaction(self.db, write=write)
        session = await manager.__aenter__()
        self._open.append((write, session, manager))
        return session

    async def end(self, error: BaseException | None) -> None:
        """End every open transaction, the last opened first; a failed commit rolls the
        rest back and is raised once all have ended."""
        failure: BaseException | None = None
        while self._open:
            _, _, manager = self._open.pop()
            cause = error or failure
            try:
                if cause is None:
                    await manager.__aexit__(None, None, None)
                else:
                    await manager.__aexit__(type(cause), cause, cause.__traceback__)
            except BaseException as raised:  # noqa: BLE001 - re-raised below
                if raised is not cause:
                    failure = failure or raised
        if failure is not None and error is None:
            raise failure


TRANSACTIONS = "agent_broker.transactions"


def request_transactions(request: Request) -> RequestTransactions:
    opened = request.scope.get(TRANSACTIONS)
    if opened is None:
        raise RuntimeError(
            "a request session was asked for outside a BrokerRoute "
            "(agent_broker.http.routing): nothing would end its transaction"
        )
    return opened


async def write_session(request: Request) -> Session:
    return await request_transactions(request).session(write=True)


async def read_session(request: Request) -> Session:
    return await request_transactions(request).session(write=False)


WriteSession = Annotated[Session, Depends(write_session)]
ReadSession = Annotated[Session, Depends(read_session)]
