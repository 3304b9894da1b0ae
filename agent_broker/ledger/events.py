"""What the ledger tells the rest of the service about money it moved, once it is final.

Today one event: a fee paid into the fee book (FEES), by journal entry kind. The ledger
notes it in the session while the transaction is open and publishes it to the listeners
subscribed on the session factory only when that transaction commits (on SQLite, when the
commit its request shares with others has written it: agent_broker.db.group_commit); a
rollback of the transaction, or of a savepoint the fee was written in, forgets it.
Listeners (metrics) subscribe here, so the ledger never imports what counts it."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from agent_broker.db.group_commit import after_durable_commit

# Called with (journal entry kind, micro-USD) for each fee of a committed transaction.
FeeListener = Callable[[str, int], None]

# Fees journalled in a session and not yet committed: (transaction, kind, micro-USD).
_PENDING = "agent_broker.ledger.pending_fees"


def fee_captured(session: Session, *, kind: str, amount_micro: int) -> None:
    """Note a fee journalled in this session's current transaction (or savepoint)."""
    if session.get_transaction() is None:
        # A light session (agent_broker.db.light) that has only run prepared statements:
        # give it the ORM transaction whose commit tells the listeners.
        session.begin()
    tag = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(_PENDING, []).append((tag, kind, amount_micro))


def on_fees_committed(factory: sessionmaker[Session], listener: FeeListener) -> None:
    """Call `listener` for each fee journalled by a session of `factory`, after the
    transaction that journalled it commits."""

    def _after_commit(session: Session) -> None:
        if session.get_nested_transaction() is not None:
            return  # a savepoint released: the outer transaction may still roll back
        fees = [(kind, amount) for _tag, kind, amount in session.info.get(_PENDING, ())]
        if fees:
            # On SQLite the request's commit may be its group's, still to come.
            after_durable_commit(session, lambda: [listener(*fee) for fee in fees])

    event.listen(factory, "after_commit", _after_commit)


def _within(tag: SessionTransaction | None, ended: SessionTransaction) -> bool:
    while tag is not None:
        if tag is ended:
            return True
        tag = tag.parent
    return False


@event.listens_for(Session, "after_soft_rollback")
def _forget_rolled_back(session: Session, previous: SessionTransaction) -> None:
    pending = session.info.get(_PENDING)
    if pending:
        pending[:] = [entry for entry in pending if not _within(entry[0], previous)]


@event.listens_for(Session, "after_transaction_end")
def _forget_at_end(session: Session, transaction: SessionTransaction) -> None:
    # Once the outermost transaction has ended nothing noted in it may be published any
    # more: committed fees were published just before, in after_commit (which runs first,
    # so every listener of the factory sees them).
    if transaction.parent is None:
        session.info.pop(_PENDING, None)
