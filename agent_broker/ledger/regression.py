"""The chain must only grow. Every verdict keeps a high-water mark, the latest checkpoint
that run saw (sequence, hash, sealed_at); the next run must still find that checkpoint,
unchanged, and a latest checkpoint at or past it. Otherwise seals and checkpoints were
removed, or the chain was re-sealed from an earlier point (even from genesis over
unaltered rows, which yields the same hashes but new checkpoint times): `chain_regressed`.

Checkpoints are append-only and a checkpoint is never rewritten by the sealer, so a
legitimate run always finds the mark. When a regression is found the old mark is kept,
so the verdict stays broken on every later run; only removing the stored verdict (an
operator's act, outside the verdict's scope) starts a new mark."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from agent_broker.ledger.models import ChainCheckpoint
from agent_broker.ledger.verdict import Mark, VerdictUnreadable, recorded_mark
from agent_broker.ledger.verification import Verification

REGRESSED = "chain_regressed"
VERDICT_UNREADABLE = "verdict_unreadable"


def check_mark(session: Session, found: Verification) -> Mark | None:
    """Compare the chain with the mark the stored verdict keeps, adding any problem to
    `found`; returns the mark the next verdict is to keep. Reads the caller's snapshot,
    which must also be the one the chain is verified in: a verdict stored by an
    overlapping run is then never compared with a chain older than the one it saw."""
    latest = session.execute(
        select(ChainCheckpoint.sequence, ChainCheckpoint.hash, ChainCheckpoint.sealed_at)
        .order_by(ChainCheckpoint.sequence.desc())
        .limit(1)
    ).first()
    current = None if latest is None else Mark(latest[0], latest[1], latest[2])
    try:
        previous = recorded_mark(session)
    except VerdictUnreadable:
        found.add(
            None,
            VERDICT_UNREADABLE,
            "the previous verdict cannot be read, so the chain could not be compared with "
            "the checkpoint it recorded",
        )
        return current
    if previous is None:
        return current
    if current is None or current.sequence < previous.sequence:
        now_at = "nothing" if current is None else f"row {current.sequence}"
        found.add(
            previous.sequence,
            REGRESSED,
            f"the chain's last checkpoint went back from row {previous.sequence} to {now_at}: "
            "seals or checkpoints were removed",
        )
        return previous
    kept = session.execute(
        select(ChainCheckpoint.hash, ChainCheckpoint.sealed_at).where(
            ChainCheckpoint.sequence == previous.sequence
        )
    ).first()
    if (
        kept is None
        or kept.hash != previous.hash
        or (previous.sealed_at is not None and kept.sealed_at != previous.sealed_at)
    ):
        found.add(
            previous.sequence,
            REGRESSED,
            f"the checkpoint at row {previous.sequence} that an earlier run recorded is gone "
            "or was replaced: the chain was re-sealed",
        )
        return previous
    return current
