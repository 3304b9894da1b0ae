"""The ledger publishes fees once committed; it never imports what counts them."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy.orm import Session, sessionmaker

from agent_broker import clock
from agent_broker.ledger import books, events
from agent_broker.ledger.service import charge
from tests.support.accounts import fund
from tests.support.market import FEE


def _fee(session: Session, account: str, *, sink: str = books.FEES) -> None:
    charge(session, account, FEE, sink=sink, kind="listing_fee", memo="test", now=clock.now())


def test_fees_reach_every_subscriber_only_when_their_transaction_commits(app, open_account):
    account = open_account()
    fund(app, account, 10 * FEE)
    factory = sessionmaker(bind=app.state.context.db.engine)
    first: list[tuple[str, int]] = []
    second: list[tuple[str, int]] = []
    events.on_fees_committed(factory, lambda kind, amount: first.append((kind, amount)))
    events.on_fees_committed(factory, lambda kind, amount: second.append((kind, amount)))
    with factory() as session:
        _fee(session, account)
        session.flush()
        assert first == []  # journalled, not yet committed
        with session.begin_nested():
            _fee(session, account)
        assert first == []  # a released savepoint commits nothing yet
        savepoint = session.begin_nested()
        _fee(session, account)
        savepoint.rollback()
        _fee(session, account, sink=books.OPERATOR)  # not a fee
        session.commit()
    assert first == second == [("listing_fee", FEE), ("listing_fee", FEE)]
    with factory() as session:
        _fee(session, account)
        session.rollback()
        _fee(session, account)
    assert len(first) == 2  # rolled back, then closed without a commit
    # Sessions of other factories publish nothing to these subscribers.
    with app.state.context.db.writer() as session:
        _fee(session, account)
        session.commit()
    assert len(first) == 2


def test_a_light_sessions_fees_are_published_by_its_own_commit(app, open_account):
    """The service's sessions (agent_broker.db.light) journal fees with prepared statements
    only: their commit tells the subscribers, with no ORM transaction begun for it, and
    their rollback forgets the fees."""
    account = open_account()
    fund(app, account, 10 * FEE)
    told: list[tuple[str, int]] = []
    events.on_fees_committed(
        app.state.context.db.writer, lambda kind, amount: told.append((kind, amount))
    )
    with app.state.context.db.writer() as session:
        _fee(session, account)
        assert session.get_transaction() is None  # prepared statements only
        session.commit()
        assert told == [("listing_fee", FEE)]
        _fee(session, account)
        session.rollback()
        session.commit()
    assert told == [("listing_fee", FEE)]


def test_the_ledger_imports_nothing_from_meta():
    """Imports run downhill: metrics subscribes to the ledger, never the reverse."""
    code = (
        "import pkgutil, importlib, sys\n"
        "import agent_broker.ledger as ledger\n"
        "for module in pkgutil.iter_modules(ledger.__path__):\n"
        "    importlib.import_module(f'agent_broker.ledger.{module.name}')\n"
        "print(sorted(m for m in sys.modules if m.startswith('agent_broker.meta')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
