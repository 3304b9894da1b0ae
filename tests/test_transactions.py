"""One transaction per request: it ends (commit or rollback) before the dependency exits,
so no lock outlives a refused request."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from types import SimpleNamespace

import pytest

from agent_broker import clock
from agent_broker.db.session import read_session, write_session
from agent_broker.ledger import books
from agent_broker.ledger.service import credit, wallet
from agent_broker.problems import NotFound
from tests.helpers import register


def _enter_and_exit(app, dependency, work, error):
    request = SimpleNamespace(app=app)

    async def scenario():
        manager = asynccontextmanager(dependency)(request)
        session = await manager.__aenter__()
        work(session)
        if error is None:
            await manager.__aexit__(None, None, None)
        else:  # False: the error is not swallowed, it goes on to the problem handler
            assert await manager.__aexit__(type(error), error, None) is False
        return session

    return asyncio.run(scenario())


@pytest.mark.parametrize("error", [None, NotFound("refused")], ids=["success", "refusal"])
def test_the_write_transaction_has_ended_when_the_dependency_exits(app, client, error):
    agent = register(client)

    def work(session):
        credit(
            session, agent.account_id, 5, source=books.OPERATOR, kind="t", memo="x", now=clock.now()
        )

    session = _enter_and_exit(app, write_session, work, error)
    assert not session.in_transaction()
    with app.state.db.writer() as check:
        expected = 5 if error is None else 0
        assert wallet(check, agent.account_id, now=clock.now()).spendable_micro == expected


def test_the_read_transaction_has_ended_when_the_dependency_exits(app, client):
    agent = register(client)
    session = _enter_and_exit(
        app,
        read_session,
        lambda s: wallet(s, agent.account_id, now=clock.now()),
        NotFound("refused"),
    )
    assert not session.in_transaction()
