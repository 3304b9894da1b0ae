"""The ledger sealer: extends the hash chain over committed journal rows, re-verifies the
whole sealed range against its seals and checkpoints, reconciles balances and holds, and
stores the verdict that GET /v1/ledger/verify serves.

The ordinary write path never waits for it. Journal rows get their sequence from the
database as usual; the sealer works behind them, in short transactions of its own:

- sealing reads in a transaction that takes no lock and writes only its new seals and
  one checkpoint, so on SQLite the write lock is held for a few inserts, and on
  PostgreSQL no row a money write touches is ever locked;
- verification reads in one consistent snapshot (deferred on SQLite, REPEATABLE READ on
  PostgreSQL) and writes nothing;
- the verdict is one row replaced at the end.

Where the chain may end. The sealed range is every sequence up to the head, so the head
may only pass a sequence value once no row can still appear with it. Rows are sealed in
sequence order, older than a safety margin, and the run stops at the first row that is
younger. A missing value below a visible row (a gap) is passed only when it is final:
on SQLite writers are serialised and a row's sequence is above every committed one, so a
gap can never be filled later; on PostgreSQL a sequence value can belong to a transaction
still in flight, so the sealer reads how far the sequence has been handed out, waits for
every transaction running at that moment to end, and then reads the rows again (see
_final_through). If that wait times out, the run stops at the gap and tries again next
time."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.ledger import verdict
from agent_broker.ledger.audit import audit
from agent_broker.ledger.chain import GENESIS_HASH, GENESIS_SEQUENCE, SealedEntry, link_hash
from agent_broker.ledger.chain_rows import entries_after, reader, writer
from agent_broker.ledger.models import ChainCheckpoint, ChainSeal
from agent_broker.ledger.verdict import latest_verdict_status
from agent_broker.ledger.verification import Verification, verify

__all__ = [
    "SAFETY_MARGIN",
    "SealerRun",
    "latest_verdict_status",
    "run",
    "seal",
    "verify",
    "Verification",
]

# Rows younger than this are left for a later run: the write path keeps its room.
SAFETY_MARGIN = timedelta(minutes=5)
SEAL_BATCH = 1000  # rows sealed per write transaction
# How long one run waits for in-flight PostgreSQL transactions before passing a gap.
SETTLE_TIMEOUT_S = 5.0
_SETTLE_POLL_S = 0.01


@dataclass(frozen=True)
class SealerRun:
    sealed: int  # rows newly sealed in this run
    status: str  # the verdict stored: ok or broken
    problem_count: int

    @property
    def outcome(self) -> str:
        return f"sealed {self.sealed} rows; verdict {self.status} ({self.problem_count} problems)"


def run(engine: Engine, *, now: datetime, margin: timedelta = SAFETY_MARGIN) -> SealerRun:
    """One sealer run: seal, re-verify and reconcile (agent_broker.ledger.audit), store the
    verdict with the chain's new high-water mark (refreshed even if nothing new)."""
    sealed = seal(engine, now=now, margin=margin)
    audited = audit(engine)
    found = audited.found
    document = verdict.encode(
        computed_at=clock.now(),
        head=found.head,
        problems=found.problems,
        problem_count=found.problem_count,
        mark=audited.mark,
    )
    with writer(engine) as session:
        verdict.store(session, document)
        session.commit()
    status = "broken" if found.problem_count else "ok"
    return SealerRun(sealed=sealed, status=status, problem_count=found.problem_count)


# --- sealing ----------------------------------------------------------------------------


def seal(engine: Engine, *, now: datetime, margin: timedelta = SAFETY_MARGIN) -> int:
    """Extend the chain over rows created at or before now - margin; the number sealed.

    Safe when two runs overlap: a seal's sequence and its link to the previous one are
    both unique, so the slower run's inserts collide, it rolls back, and the chain keeps
    the one extension that committed."""
    cutoff = now - margin
    total = 0
    while True:
        added = _seal_batch(engine, cutoff=cutoff, now=now)
        if added is None:  # another sealer extended the chain first
            return total
        total += added
        if added < SEAL_BATCH:
            return total


@dataclass(frozen=True)
class _Head:
    sequence: int
    hash: str


def _head(session: Session) -> _Head:
    checkpoint = session.execute(
        select(ChainCheckpoint.sequence, ChainCheckpoint.hash)
        .order_by(ChainCheckpoint.sequence.desc())
        .limit(1)
    ).first()
    if checkpoint is None:
        return _Head(GENESIS_SEQUENCE, GENESIS_HASH)
    # New links continue from the stored seal, so a damaged checkpoint is reported by
    # verification without every later link being computed from the damage.
    stored = session.scalar(select(ChainSeal.hash).where(ChainSeal.sequence == checkpoint[0]))
    return _Head(checkpoint[0], stored or checkpoint[1])


def _seal_batch(engine: Engine, *, cutoff: datetime, now: datetime) -> int | None:
    with reader(engine) as session:
        head = _head(session)
        final_through: int | None = None
        while True:
            entries = entries_after(session, head.sequence, SEAL_BATCH)
            chosen, stopped_at_gap = _sealable(entries, head, cutoff, final_through)
            if not stopped_at_gap or final_through is not None:
                break
            # Rows may commit into the gap while we wait, so read them again afterwards.
            final_through = _final_through(session)
    if not chosen:
        return 0
    seals, prev_sequence, prev_hash = [], head.sequence, head.hash
    for entry in chosen:
        digest = link_hash(prev_hash, entry)
        seals.append({"sequence": entry.sequence, "prev_sequence": prev_sequence, "hash": digest})
        prev_sequence, prev_hash = entry.sequence, digest
    with writer(engine) as session:
        try:
            session.execute(insert(ChainSeal), seals)
            session.execute(
                insert(ChainCheckpoint),
                [{"sequence": prev_sequence, "hash": prev_hash, "sealed_at": now}],
            )
            session.commit()
        except IntegrityError:
            session.rollback()
            return None
    return len(seals)


def _sealable(
    entries: list[SealedEntry], head: _Head, cutoff: datetime, final_through: int | None
) -> tuple[list[SealedEntry], bool]:
    """The run of entries that may be sealed next, and whether it stopped at a gap."""
    chosen: list[SealedEntry] = []
    previous = head.sequence
    for entry in entries:
        if entry.created_at > cutoff:
            return chosen, False
        if entry.sequence != previous + 1 and (
            final_through is None or entry.sequence - 1 > final_through
        ):
            return chosen, True
        chosen.append(entry)
        previous = entry.sequence
    return chosen, False


def _final_through(session: Session) -> int:
    """A sequence value at or below which every value is final: visible now, or never.

    SQLite: writers are serialised and take sequences above every committed row, so every
    value below a visible row is final. PostgreSQL: read how far the sequence has been
    handed out, then wait until every transaction running at that moment has ended; a
    second round catches a writer that had drawn its value but not yet its transaction
    id. On timeout (a long transaction anywhere on the server), 0: pass no gap this run."""
    if session.bind.dialect.name == "sqlite":
        return sys.maxsize
    sequence_name = session.scalar(
        text("SELECT pg_get_serial_sequence('ledger_entries', 'sequence')")
    )
    handed_out = session.scalar(
        text(f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {sequence_name}")
    )
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    for _round in range(2):
        running = session.scalars(
            text(
                "SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x"
                " WHERE x IS DISTINCT FROM pg_current_xact_id_if_assigned()"
            )
        ).all()
        while running:
            if time.monotonic() > deadline:
                return 0
            time.sleep(_SETTLE_POLL_S)
            running = session.scalars(
                text(
                    "SELECT x::text FROM unnest(CAST(:xids AS xid8[])) AS x"
                    " WHERE pg_xact_status(x) = 'in progress'"
                ),
                {"xids": running},
            ).all()
    return int(handed_out or 0)
