"""What the ledger tells the rest of the service about money it moved, once it is final.

Today one event: a fee paid into the fee book (FEES), by journal entry kind. The ledger
notes it in the session while the transaction is open and publishes it to the listeners
subscribed on the session factory only when that transaction commits (on SQLite, when the
commit its request shares with others has written it: agent_broker.db.group_commit); a
rollback of the transaction, or of a savepoint the fee was written in, forgets it.
Listeners (metrics) subscribe here, so the ledger never imports what counts them.

It relies on the session's `after_commit` and `after_rollback` events only, which every
session tells of, a light one (agent_broker.db.light) too when its transaction ran only
prepared statements, and which cost such a session no ORM transaction. A session closed
with neither keeps what it noted; the service never uses one again."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import partial

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from agent_broker.db.group_commit import after_durable_commit

# Called with (journal entry kind, micro-USD) for each fee of a committed transaction.
FeeListener = Callable[[str, int], None]

# Fees journalled in a session and not yet committed: (savepoint or None, kind, micro-USD).
_PENDING = "agent_broker.ledger.pending_fees"

# The listeners subscribed per session class (a factory's sessions are of its own class).
_subscribed: weakref.WeakKeyDictionary[type, list[FeeListener]] = weakref.WeakKeyDictionary()


def fee_captured(session: Session, *, kind: str, amount_micro: int) -> None:
    """Note a fee journalled in this session's current transaction (or savepoint), if
    anyone listens for the fees of its factory."""
    if any(cls in _subscribed for cls in type(session).__mro__):
        entry = (session.get_nested_transaction(), kind, amount_micro)
        session.info.setdefault(_PENDING, []).append(entry)


def on_fees_committed(factory: sessionmaker[Session], listener: FeeListener) -> None:
    """Call `listener` for each fee journalled by a session of `factory`, after the
    transaction that journalled it commits."""
    listeners = _subscribed.get(factory.class_)
    if listeners is None:
        listeners = _subscribed[factory.class_] = []
        event.listen(factory, "after_commit", partial(_publish, listeners))
        event.listen(factory, "after_rollback", _forget_rolled_back)
    listeners.append(listener)


def _publish(listeners: list[FeeListener], session: Session) -> None:
    if session.get_nested_transaction() is not None:
        return  # a savepoint released: the outer transaction may still roll back
    pending = session.info.pop(_PENDING, None)
    if pending:
        fees = [(kind, amount) for _savepoint, kind, amount in pending]
        for listener in listeners:
            # On SQLite the request's commit may be its group's, still to come.
            after_durable_commit(session, partial(_tell, listener, fees))


def _tell(listener: FeeListener, fees: list[tuple[str, int]]) -> None:
    for fee in fees:
        listener(*fee)


def _within(savepoint: SessionTransaction | None, ended: SessionTransaction) -> bool:
    while savepoint is not None:
        if savepoint is ended:
            return True
        savepoint = savepoint.parent
    return False


def _forget_rolled_back(session: Session) -> None:
    pending = session.info.get(_PENDING)
    if not pending:
        return
    # SQLAlchemy tells of a savepoint's rollback while the savepoint is still the session's.
    savepoint = session.get_nested_transaction()
    if savepoint is None:
        session.info.pop(_PENDING)  # the whole transaction
    else:
        pending[:] = [entry for entry in pending if not _within(entry[0], savepoint)]
