"""One transaction per request: it commits when the route returns and rolls back when it
raises, before the response leaves. Services only flush.

Opening a session does no I/O, so it happens on the event loop; the commit or rollback at
the end runs where the database's blocking work runs (agent_broker.db.dispatch)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.group_commit import WriteGate


def _finish(session: Session, succeeded: bool) -> None:
    try:
        if succeeded:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


class _Transaction:
    """`async with transaction(db, write=...) as session`: the session slot and, for a
    writer where work runs inline, the write gate are taken first; the session is committed
    when the block ends, rolled back if it raises, closed either way, and what was taken is
    given back. On SQLite a writer's commit may be its group's (agent_broker.db.
    group_commit): leaving the gate then waits for it. A plain class, not a generator:
    this runs for every request."""

    __slots__ = ("db", "write", "session", "_taken")

    def __init__(self, db: Database, write: bool) -> None:
        self.db = db
        self.write = write
        self._taken: list[AbstractAsyncContextManager[object]] = []

    async def __aenter__(self) -> Session:
        gate = self.db.write_gate() if self.write else None
        try:
            for held in (self.db.session_slot(), gate):
                if held is not None:
                    await held.__aenter__()
                    self._taken.append(held)
            self.session = (self.db.writer if self.write else self.db.reader)()
        except BaseException:
            await self._give_back()
            raise
        if isinstance(gate, WriteGate) and gate.group is not None:
            self.session.group = gate.group  # type: ignore[attr-defined]
        return self.session

    async def __aexit__(self, kind: object, error: BaseException | None, _tb: object) -> bool:
        try:
            await run(self.session, _finish, self.session, error is None)
        finally:
            await self._give_back()
        return False  # an error goes on to the problem handler

    async def _give_back(self) -> None:
        failure: BaseException | None = None
        while self._taken:
            try:
                await self._taken.pop().__aexit__(None, None, None)
            except BaseException as raised:  # noqa: BLE001 - the rest is given back first
                failure = failure or raised
        if failure is not None:
            raise failure


def transaction(db: Database, *, write: bool) -> AbstractAsyncContextManager[Session]:
    """One transaction, committed when the block ends and rolled back if it raises. Most
    routes get theirs from the dependencies below; a route that must make a network call
    opens its own on either side of it, holding neither a session nor the write gate
    while it waits on the network."""
    return _Transaction(db, write)


class RequestTransactions:
    """A request's transactions: each opens when the route's dependencies first ask for it
    (after the ones that may call out to the network, which come first), and all of them
    end when the route's handler has built its answer, before it is sent: committed if the
    handler returned, rolled back if it raised (agent_broker.http.routing.BrokerRoute).

    Plain dependencies rather than ones with yield: FastAPI's exit machinery for those cost
    more per request than the transaction itself (make bench)."""

    __slots__ = ("db", "_open", "wrote")

    def __init__(self, db: Database) -> None:
        self.db = db
        self._open: list[tuple[bool, Session, AbstractAsyncContextManager[Session]]] = []
        # Whether a write transaction was opened: a request that opened one is never run
        # again by the server (agent_broker.http.routing).
        self.wrote = False

    async def session(self, *, write: bool) -> Session:
        for writes, session, _ in self._open:
            if writes is write:
                return session
        manager = transaction(self.db, write=write)
        self.wrote = self.wrote or write
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


# BrokerRoute ends the transactions of a route that depends on any of these (the auth
# seam's caller dependency carries the same mark).
write_session.opens_request_session = True  # type: ignore[attr-defined]
read_session.opens_request_session = True  # type: ignore[attr-defined]

WriteSession = Annotated[Session, Depends(write_session)]
ReadSession = Annotated[Session, Depends(read_session)]
