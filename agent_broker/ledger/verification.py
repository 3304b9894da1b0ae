"""Verification of the sealed range: every link recomputed from the journal rows as they
are now, every checkpoint checked against the chain. Reads one snapshot; writes nothing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sqlalchemy import Engine, func, or_, select
from sqlalchemy.orm import Session

from agent_broker.ledger.chain import GENESIS_HASH, GENESIS_SEQUENCE, link_hash
from agent_broker.ledger.chain_rows import entries_between, snapshot
from agent_broker.ledger.models import ChainCheckpoint, ChainSeal, JournalEntry
from agent_broker.ledger.verdict import MAX_LISTED_PROBLEMS, StoredProblem

VERIFY_BATCH = 2000  # seals read per round of verification


@dataclass
class Verification:
    head: tuple[int, str] | None = None  # (sequence, hash) of the sealed range's last row
    problems: list[StoredProblem] = field(default_factory=list)  # the first few
    problem_count: int = 0
    listed: int = MAX_LISTED_PROBLEMS  # how many problems are kept; all are counted
    # Whether details may name account, hold and thread ids. The public verdict may not
    # (an account id is private, and so are a thread's parties); the operator's command
    # may. Unrevealed, an id is named by a short digest the operator can match.
    reveal_ids: bool = False

    def name(self, identifier: str) -> str:
        if self.reveal_ids:
            return identifier
        return "ref " + hashlib.sha256(identifier.encode()).hexdigest()[:12]

    def add(self, sequence: int | None, kind: str, detail: str) -> None:
        self.problem_count += 1
        if len(self.problems) < self.listed:
            self.problems.append(StoredProblem(sequence=sequence, kind=kind, detail=detail))

    @property
    def room(self) -> int:
        """How many more problems would still be listed."""
        return max(0, self.listed - len(self.problems))


def verify(engine: Engine) -> Verification:
    """Recompute every link of the sealed range from the journal rows as they are now,
    and check each checkpoint against the chain. Reads one snapshot; writes nothing."""
    with snapshot(engine) as session:
        found = Verification()
        verify_chain(session, found)
        return found


def verify_chain(session: Session, found: Verification) -> None:
    """The chain checks of verify(), in the caller's snapshot, added to `found`."""
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
            return  # nothing sealed
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
        entries = {e.sequence: e for e in entries_between(session, cursor, upper)}
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
        .limit(found.room)
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
