"""Reading journal rows for the chain, in transactions of the sealer's own that never
hold a lock a money write needs (see agent_broker.ledger.sealer)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Engine, Row, Select, select
from sqlalchemy.orm import Session

from agent_broker.db.engine import BEGIN_MODE
from agent_broker.ledger.chain import SealedEntry, group_postings
from agent_broker.ledger.models import JournalEntry, Posting


@contextmanager
def writer(engine: Engine) -> Iterator[Session]:
    # On SQLite the engine begins with BEGIN IMMEDIATE (agent_broker.db.engine).
    with Session(bind=engine, expire_on_commit=False) as session:
        yield session


@contextmanager
def _read_only(engine: Engine, pg_isolation: str) -> Iterator[Session]:
    # SQLite: a deferred transaction takes no lock and, in WAL mode, reads one snapshot
    # from its first read. PostgreSQL: the isolation level the caller needs.
    if is_sqlite(engine):
        bind = engine.execution_options(**{BEGIN_MODE: "DEFERRED"})
    else:
        bind = engine.execution_options(isolation_level=pg_isolation)
    with Session(bind=bind) as session:
        try:
            yield session
        finally:
            session.rollback()


def reader(engine: Engine) -> AbstractContextManager[Session]:
    """Reads that take no lock; on PostgreSQL each statement sees the latest commits (set
    explicitly: re-reading after the wait in sealer._final_through depends on it)."""
    return _read_only(engine, "READ COMMITTED")


def snapshot(engine: Engine) -> AbstractContextManager[Session]:
    """One consistent snapshot for every read, taking no lock."""
    return _read_only(engine, "REPEATABLE READ")


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


_ENTRIES = select(
    JournalEntry.sequence,
    JournalEntry.id,
    JournalEntry.kind,
    JournalEntry.memo,
    JournalEntry.reference,
    JournalEntry.real_money,
    JournalEntry.created_at,
).order_by(JournalEntry.sequence)


def entries_after(session: Session, after: int, limit: int) -> list[SealedEntry]:
    return _load(session, _ENTRIES.where(JournalEntry.sequence > after).limit(limit))


def entries_between(session: Session, low: int | None, high: int) -> list[SealedEntry]:
    """Entries with low < sequence <= high (no lower bound when low is None)."""
    query = _ENTRIES.where(JournalEntry.sequence <= high)
    if low is not None:
        query = query.where(JournalEntry.sequence > low)
    return _load(session, query)


def _load(session: Session, query: Select) -> list[SealedEntry]:
    rows = session.connection().execute(query).all()
    if not rows:
        return []
    return _with_postings(session, rows, rows[0].sequence, rows[-1].sequence)


def _with_postings(
    session: Session, rows: Sequence[Row], first: int, last: int
) -> list[SealedEntry]:
    postings = group_postings(
        session.connection().execute(
            select(Posting.entry_sequence, Posting.id, Posting.account_code, Posting.amount_micro)
            .where(Posting.entry_sequence >= first, Posting.entry_sequence <= last)
            .order_by(Posting.id)
        )
    )
    return [
        SealedEntry(
            sequence=row.sequence,
            id=row.id,
            kind=row.kind,
            memo=row.memo,
            reference=row.reference,
            real_money=row.real_money,
            created_at=row.created_at,
            postings=tuple(postings.get(row.sequence, ())),
        )
        for row in rows
    ]
