"""The ledger sealer: extends the hash chain over committed journal rows, re-verifies the
whole sealed range against its seals and checkpoints, and stores the verdict that
GET /v1/ledger/verify serves.

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine, Row, func, insert, or_, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.db.engine import BEGIN_MODE
from agent_broker.ledger import verdict
from agent_broker.ledger.chain import (
    GENESIS_HASH,
    GENESIS_SEQUENCE,
    SealedEntry,
    group_postings,
    link_hash,
)
from agent_broker.ledger.models import ChainCheckpoint, ChainSeal, JournalEntry, Posting
from agent_broker.ledger.verdict import MAX_LISTED_PROBLEMS, StoredProblem, latest_verdict_status

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
VERIFY_BATCH = 2000  # seals read per round of verification
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
    """One sealer run: seal, re-verify, store the verdict (refreshed even if nothing new)."""
    sealed = seal(engine, now=now, margin=margin)
    found = verify(engine)
    document = verdict.encode(
        computed_at=clock.now(),
        head=found.head,
        problems=found.problems,
        problem_count=found.problem_count,
    )
    with _writer(engine) as session:
        verdict.store(session, document)
        session.commit()
    status = "broken" if found.problem_count else "ok"
    return SealerRun(sealed=sealed, status=status, problem_count=found.problem_count)


# --- transactions -----------------------------------------------------------------------


@contextmanager
def _writer(engine: Engine) -> Iterator[Session]:
    # On SQLite the engine begins with BEGIN IMMEDIATE (agent_broker.db.engine).
    with Session(bind=engine, expire_on_commit=False) as session:
        yield session


@contextmanager
def _reader(engine: Engine) -> Iterator[Session]:
    """Reads that take no lock; on PostgreSQL each statement sees the latest commits (set
    explicitly: re-reading after the wait in _final_through depends on it)."""
    if _sqlite(engine):
        bind = engine.execution_options(**{BEGIN_MODE: "DEFERRED"})
    else:
        bind = engine.execution_options(isolation_level="READ COMMITTED")
    with Session(bind=bind) as session:
        try:
            yield session
        finally:
            session.rollback()


@contextmanager
def _snapshot(engine: Engine) -> Iterator[Session]:
    """One consistent snapshot for every read, taking no lock."""
    if _sqlite(engine):
        # A deferred read transaction in WAL mode sees one snapshot from its first read.
        bind = engine.execution_options(**{BEGIN_MODE: "DEFERRED"})
    else:
        bind = engine.execution_options(isolation_level="REPEATABLE READ")
    with Session(bind=bind) as session:
        try:
            yield session
        finally:
            session.rollback()


def _sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


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
    with _reader(engine) as session:
        head = _head(session)
        final_through: int | None = None
        while True:
            entries = _entries_after(session, head.sequence, SEAL_BATCH)
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
    with _writer(engine) as session:
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
    if session.get_bind().dialect.name == "sqlite":
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


def _entries_after(session: Session, after: int, limit: int) -> list[SealedEntry]:
    rows = (
        session.connection()
        .execute(
            select(
                JournalEntry.sequence,
                JournalEntry.id,
                JournalEntry.kind,
                JournalEntry.memo,
                JournalEntry.reference,
                JournalEntry.real_money,
                JournalEntry.created_at,
            )
            .where(JournalEntry.sequence > after)
            .order_by(JournalEntry.sequence)
            .limit(limit)
        )
        .all()
    )
    if not rows:
        return []
    return _with_postings(session, rows, rows[0].sequence, rows[-1].sequence)


def _entries_between(session: Session, low: int | None, high: int) -> list[SealedEntry]:
    """Entries with low < sequence <= high (no lower bound when low is None)."""
    query = (
        select(
            JournalEntry.sequence,
            JournalEntry.id,
            JournalEntry.kind,
            JournalEntry.memo,
            JournalEntry.reference,
            JournalEntry.real_money,
            JournalEntry.created_at,
        )
        .where(JournalEntry.sequence <= high)
        .order_by(JournalEntry.sequence)
    )
    if low is not None:
        query = query.where(JournalEntry.sequence > low)
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


# --- verification -----------------------------------------------------------------------


@dataclass
class Verification:
    head: tuple[int, str] | None = None  # (sequence, hash) of the sealed range's last row
    problems: list[StoredProblem] = field(default_factory=list)  # the first few
    problem_count: int = 0

    def add(self, sequence: int | None, kind: str, detail: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_LISTED_PROBLEMS:
            self.problems.append(StoredProblem(sequence=sequence, kind=kind, detail=detail))


def verify(engine: Engine) -> Verification:
    """Recompute every link of the sealed range from the journal rows as they are now,
    and check each checkpoint against the chain. Reads one snapshot; writes nothing."""
    with _snapshot(engine) as session:
        return _verify(session)


def _verify(session: Session) -> Verification:
    found = Verification()
    latest = session.execute(
        select(ChainCheckpoint.sequence, ChainCheckpoint.hash)
        .order_by(ChainCheckpoint.sequence.desc())
        .limit(1)
    ).first()
    if latest is not None:
        head_sequence = latest[0]
        found.head = (head_sequence, latest[1])
    else:
        last_seal = session.execute(
            select(ChainSeal.sequence, ChainSeal.hash).order_by(ChainSeal.sequence.desc()).limit(1)
        ).first()
        if last_seal is None:
            return found  # nothing sealed
        # Seals without any checkpoint: the checkpoints were removed. Verify what is there.
        head_sequence = last_seal[0]
        found.head = (head_sequence, last_seal[1])
        found.add(
            head_sequence,
            "checkpoint_missing",
            f"rows up to {head_sequence} are sealed but no checkpoint records the chain",
        )

    # The range starts at the start of the journal: a row slipped in below the first
    # sealed one (sequence 0 or less) is inside it too, hence no lower bound at first.
    cursor: int | None = None
    prev_sequence, prev_hash = GENESIS_SEQUENCE, GENESIS_HASH
    while cursor is None or cursor < head_sequence:
        seals = (
            session.connection()
            .execute(
                select(ChainSeal.sequence, ChainSeal.prev_sequence, ChainSeal.hash)
                .where(ChainSeal.sequence > (cursor or GENESIS_SEQUENCE))
                .where(ChainSeal.sequence <= head_sequence)
                .order_by(ChainSeal.sequence)
                .limit(VERIFY_BATCH)
            )
            .all()
        )
        upper = seals[-1].sequence if len(seals) == VERIFY_BATCH else head_sequence
        entries = {e.sequence: e for e in _entries_between(session, cursor, upper)}
        by_sequence = {s.sequence: s for s in seals}
        for sequence in sorted(entries.keys() | by_sequence.keys()):
            seal_row, entry = by_sequence.get(sequence), entries.get(sequence)
            if seal_row is None:
                found.add(
                    sequence,
                    "row_unsealed",
                    f"journal row {sequence} lies inside the sealed range but was never sealed",
                )
                continue
            base = prev_hash
            if seal_row.prev_sequence != prev_sequence:
                base = _linked_hash(session, seal_row.prev_sequence)
                if base is None:
                    _report_lost_seal(session, found, seal_row.prev_sequence, sequence)
                else:
                    found.add(
                        sequence,
                        "chain_link_broken",
                        f"the seal of journal row {sequence} links to row "
                        f"{seal_row.prev_sequence}, not to row {prev_sequence} sealed before it",
                    )
            if entry is None:
                found.add(sequence, "row_missing", f"journal row {sequence} was sealed but is gone")
            elif base is not None and link_hash(base, entry) != seal_row.hash:
                found.add(
                    sequence, "row_altered", f"journal row {sequence} differs from what was sealed"
                )
            prev_sequence, prev_hash = sequence, seal_row.hash
        cursor = upper

    mismatched = session.scalars(
        select(ChainCheckpoint.sequence)
        .outerjoin(ChainSeal, ChainSeal.sequence == ChainCheckpoint.sequence)
        .where(or_(ChainSeal.hash.is_(None), ChainSeal.hash != ChainCheckpoint.hash))
        .order_by(ChainCheckpoint.sequence)
    )
    for sequence in mismatched:
        found.add(
            sequence,
            "checkpoint_mismatch",
            f"the checkpoint at journal row {sequence} does not match the chain",
        )

    beyond = session.scalars(
        select(ChainSeal.sequence)
        .where(ChainSeal.sequence > head_sequence)
        .order_by(ChainSeal.sequence)
        .limit(MAX_LISTED_PROBLEMS)
    ).all()
    beyond_count = session.scalar(
        select(func.count()).select_from(ChainSeal).where(ChainSeal.sequence > head_sequence)
    )
    for sequence in beyond:
        found.add(
            sequence,
            "seal_outside_range",
            f"journal row {sequence} has a seal beyond the last checkpoint",
        )
    # Counted, not listed, past the cap.
    found.problem_count += max(0, int(beyond_count or 0) - len(beyond))
    return found


def _report_lost_seal(session: Session, found: Verification, lost: int, linker: int) -> None:
    """A seal links to a seal that is gone; say whether its row went with it."""
    if session.get(JournalEntry, lost) is None:
        kind, detail = "row_missing", f"journal row {lost} and its seal are gone"
    else:
        kind, detail = "seal_missing", f"the seal of journal row {lost} is gone"
    found.add(lost, kind, f"{detail} (the seal of row {linker} links to it)")


def _linked_hash(session: Session, sequence: int) -> str | None:
    if sequence == GENESIS_SEQUENCE:
        return GENESIS_HASH
    return session.scalar(select(ChainSeal.hash).where(ChainSeal.sequence == sequence))
