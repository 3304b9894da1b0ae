"""Helpers for the hash-chain tests: journal rows, sealer runs, the stored verdict, and
tampering with the database as a malicious DBA would (dropping the append-only triggers first)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from fastapi import FastAPI
from sqlalchemy import select, text

from agent_broker import clock
from agent_broker.ledger import books, sealer
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.models import ChainCheckpoint, ChainSeal, JournalEntry

APPEND_ONLY = ("ledger_entries", "ledger_postings", "ledger_seals", "ledger_checkpoints")
PAST_MARGIN = sealer.SAFETY_MARGIN + timedelta(seconds=1)


def journal(app: FastAPI, count: int = 1, *, memo: str = "operator adjustment") -> list[int]:
    """Write `count` committed journal entries (operator to fees); their sequences."""
    references = [f"ref-{uuid.uuid4().hex[:8]}-{i}" for i in range(count)]
    with app.state.context.db.writer() as session:
        for i, reference in enumerate(references):
            post_entry(
                session,
                kind="test_adjustment",
                memo=f"{memo} {i}",
                postings=[(books.OPERATOR, -(100 + i)), (books.FEES, 100 + i)],
                now=clock.now(),
                reference=reference,
            )
        session.commit()
    with app.state.context.db.reader() as session:
        written = session.execute(
            select(JournalEntry.reference, JournalEntry.sequence).where(
                JournalEntry.reference.in_(references)
            )
        )
        sequence_of = dict(written.tuples().all())
    return [sequence_of[reference] for reference in references]


def run_sealer(app: FastAPI, **kwargs) -> sealer.SealerRun:  # type: ignore[no-untyped-def]
    return sealer.run(app.state.context.db.engine, now=clock.now(), **kwargs)


def seal_now(app: FastAPI) -> sealer.SealerRun:
    """Move the clock past the safety margin and run the sealer."""
    clock.advance(PAST_MARGIN)
    return run_sealer(app)


def seals(app: FastAPI) -> list[tuple[int, int, str]]:
    with app.state.context.db.reader() as session:
        return [
            tuple(row)
            for row in session.execute(
                select(ChainSeal.sequence, ChainSeal.prev_sequence, ChainSeal.hash).order_by(
                    ChainSeal.sequence
                )
            )
        ]


def checkpoints(app: FastAPI) -> list[tuple[int, str]]:
    with app.state.context.db.reader() as session:
        return [
            tuple(row)
            for row in session.execute(
                select(ChainCheckpoint.sequence, ChainCheckpoint.hash).order_by(
                    ChainCheckpoint.sequence
                )
            )
        ]


def entry_count(app: FastAPI) -> int:
    with app.state.context.db.reader() as session:
        return len(session.scalars(select(JournalEntry.sequence)).all())


def _drop_triggers(conn, table: str) -> None:  # type: ignore[no-untyped-def]
    if conn.dialect.name == "sqlite":
        conn.execute(text(f"DROP TRIGGER {table}_no_update"))
        conn.execute(text(f"DROP TRIGGER {table}_no_delete"))
    else:
        conn.execute(text(f"DROP TRIGGER {table}_append_only ON {table}"))


def _create_triggers(conn, table: str) -> None:  # type: ignore[no-untyped-def]
    if conn.dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            conn.execute(
                text(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
                )
            )
    else:
        conn.execute(
            text(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
            )
        )


def tamper(app: FastAPI, *statements: str, **params: object) -> None:
    """Run raw SQL against the journal with its append-only triggers dropped, then put the
    triggers back. One transaction, so the shared PostgreSQL test database never keeps a
    journal without its triggers."""
    with app.state.context.db.engine.begin() as conn:
        for table in APPEND_ONLY:
            _drop_triggers(conn, table)
        for statement in statements:
            conn.execute(text(statement), params)
        for table in APPEND_ONLY:
            _create_triggers(conn, table)


def problems_named(run_problems) -> list[tuple[int | None, str]]:  # type: ignore[no-untyped-def]
    return [(p.sequence, p.kind) for p in run_problems]


def stored_verdict(app: FastAPI) -> str | None:
    """The verdict document as stored (ledger_verdicts), None before the first."""
    with app.state.context.db.reader() as session:
        return session.scalar(text("SELECT document FROM ledger_verdicts"))


def verdict(app: FastAPI) -> dict:
    """The stored verdict, parsed."""
    raw = stored_verdict(app)
    assert raw is not None, "no verdict stored yet"
    return json.loads(raw)


def store_verdict(app: FastAPI, document: object) -> None:
    """Overwrite the stored verdict with `document` (JSON unless already text)."""
    raw = document if isinstance(document, str) else json.dumps(document)
    with app.state.context.db.engine.begin() as conn:
        conn.execute(text("UPDATE ledger_verdicts SET document = :d WHERE id = 1"), {"d": raw})
