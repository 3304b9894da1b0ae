"""One transaction per request: it ends (commit or rollback) when the route's handler has
built its answer, before the answer is sent, so no lock outlives a refused request and a
client never sees a success whose writes are not committed."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session
from starlette.types import Receive, Scope, Send

from agent_broker import clock
from agent_broker.db.session import (
    ReadSession,
    RequestTransactions,
    WriteSession,
    request_transactions,
)
from agent_broker.http.routing import include_flat
from agent_broker.ledger import books
from agent_broker.ledger.service import credit, wallet
from agent_broker.problems import NotFound
from tests.support.accounts import register


def _spendable(app: FastAPI, account_id: str) -> int:
    with app.state.context.db.writer() as check:
        return wallet(check, account_id, now=clock.now()).spendable_micro


@pytest.mark.parametrize("refused", [False, True], ids=["success", "refusal"])
def test_the_write_transaction_ends_with_the_handler(app, client, refused):
    agent = register(client)
    sessions: list[Session] = []

    @app.post("/test/credit", status_code=201)
    def credit_five(session: WriteSession) -> dict:
        sessions.append(session)
        credit(
            session, agent.account_id, 5, source=books.OPERATOR, kind="t", memo="x", now=clock.now()
        )
        if refused:
            raise NotFound("refused")
        return {"credited": 5}

    answer = client.post("/test/credit")
    assert answer.status_code == (404 if refused else 201)
    assert not sessions[0].in_transaction()
    assert _spendable(app, agent.account_id) == (0 if refused else 5)


def test_the_read_transaction_ends_with_a_refusal(app, client):
    agent = register(client)
    sessions: list[Session] = []

    @app.get("/test/read-then-refuse")
    def read_then_refuse(session: ReadSession) -> dict:
        sessions.append(session)
        wallet(session, agent.account_id, now=clock.now())
        raise NotFound("refused")

    assert client.get("/test/read-then-refuse").status_code == 404
    assert not sessions[0].in_transaction()
    # Nothing is left holding the database: a write goes straight through.
    assert register(client).account_id


def test_the_commit_happens_before_the_answer_is_sent(app, client):
    agent = register(client)
    seen_at_send: list[bool] = []
    sessions: list[Session] = []

    class Checked(JSONResponse):
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            seen_at_send.append(sessions[0].in_transaction())
            seen_at_send.append(_spendable(app, agent.account_id) == 7)
            await super().__call__(scope, receive, send)

    @app.post("/test/credit-seven")
    def credit_seven(session: WriteSession) -> Checked:
        sessions.append(session)
        credit(
            session, agent.account_id, 7, source=books.OPERATOR, kind="t", memo="x", now=clock.now()
        )
        return Checked({"credited": 7})

    assert client.post("/test/credit-seven").status_code == 200
    assert seen_at_send == [False, True]


def test_one_session_per_kind_per_request(app, client):
    register(client)
    seen: list[tuple[Session, Session]] = []

    @app.get("/test/two-asks")
    def two_asks(first: ReadSession, second: ReadSession) -> dict:
        seen.append((first, second))
        return {}

    assert client.get("/test/two-asks").status_code == 200
    assert seen[0][0] is seen[0][1]


class _Manager:
    """Stands in for a transaction's context manager, recording how it was ended."""

    def __init__(self, fail_on_commit: bool = False) -> None:
        self.fail_on_commit = fail_on_commit
        self.ended_with: list[BaseException | None] = []

    async def __aenter__(self) -> str:
        return "session"

    async def __aexit__(self, kind, error, traceback) -> bool:
        self.ended_with.append(error)
        if error is None and self.fail_on_commit:
            raise RuntimeError("commit failed")
        return False


def test_a_failed_commit_rolls_back_the_others_and_is_raised():
    opened = RequestTransactions(SimpleNamespace())
    first, failing = _Manager(), _Manager(fail_on_commit=True)
    opened._open = [(False, "read", first), (True, "write", failing)]
    with pytest.raises(RuntimeError, match="commit failed"):
        asyncio.run(opened.end(None))
    assert failing.ended_with == [None]
    assert isinstance(first.ended_with[0], RuntimeError)  # rolled back, not committed
    assert opened._open == []


def test_an_error_rolls_back_every_transaction():
    opened = RequestTransactions(SimpleNamespace())
    managers = [_Manager(), _Manager()]
    opened._open = [(False, "read", managers[0]), (True, "write", managers[1])]
    refusal = NotFound("refused")
    asyncio.run(opened.end(refusal))
    assert [m.ended_with for m in managers] == [[refusal], [refusal]]


def test_a_session_outside_a_broker_route_is_refused_loudly():
    with pytest.raises(RuntimeError, match="BrokerRoute"):
        request_transactions(SimpleNamespace(scope={}))


def test_a_plain_router_cannot_be_included():
    plain = APIRouter()

    @plain.get("/plain")
    def plain_route(session: ReadSession) -> dict:
        return {}

    with pytest.raises(TypeError, match="route_class=BrokerRoute"):
        include_flat(FastAPI(), [plain])
