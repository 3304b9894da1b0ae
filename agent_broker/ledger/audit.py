"""Everything a verdict checks, in one consistent snapshot that takes no lock: the chain
against the high-water mark of the stored verdict (agent_broker.ledger.regression), every
sealed link and checkpoint (agent_broker.ledger.verification), and the running balances,
held amounts and thread holds (agent_broker.ledger.reconciliation). Writes nothing: the
sealer stores the result as the verdict, `agent-broker ledger check` only prints it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, select

from agent_broker import clock
from agent_broker.ledger.chain_rows import snapshot
from agent_broker.ledger.models import StoredVerdict
from agent_broker.ledger.reconciliation import reconcile
from agent_broker.ledger.regression import check_mark
from agent_broker.ledger.verdict import MAX_LISTED_PROBLEMS, Mark
from agent_broker.ledger.verification import Verification, verify_chain


@dataclass(frozen=True)
class Audit:
    found: Verification
    mark: Mark | None  # the high-water mark the next stored verdict keeps


def audit(engine: Engine, *, listed: int = MAX_LISTED_PROBLEMS, reveal_ids: bool = False) -> Audit:
    """Run every check now; problems in order: regression, chain (by sequence), then
    reconciliation. At most `listed` problems are kept; all are counted. `reveal_ids`
    names accounts, holds and threads by id (the operator's command) rather than by a
    digest (the public verdict)."""
    with snapshot(engine) as session:
        # The first read fixes the snapshot; `now` is read after it, so every write the
        # snapshot shows happened at or before `now` (see reconciliation).
        session.execute(select(StoredVerdict.id).limit(1)).all()
        now = clock.now()
        found = Verification(listed=listed, reveal_ids=reveal_ids)
        mark = check_mark(session, found)
        verify_chain(session, found)
        reconcile(session, found, now=now)
    return Audit(found=found, mark=mark)
