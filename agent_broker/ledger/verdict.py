"""The stored ledger verdict: the document the sealer writes, and how it is served.

GET /v1/ledger/verify checks nothing itself (docs/interface.md §19): it serves the last document
the sealer stored, adding only `scope` and `stale`. A document that cannot be read or is
in no recognised state is never repaired or guessed at; it is served as `unavailable`.

The document also keeps the chain's high-water mark (never served): the latest checkpoint
an earlier run saw, which the next run must still find (agent_broker.ledger.regression)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.ledger.chain import HASH_ALGORITHM
from agent_broker.ledger.models import StoredVerdict

VERDICT_ID = 1
MAX_LISTED_PROBLEMS = 20
STALE_AFTER = timedelta(hours=3)
FUTURE_TOLERANCE = timedelta(minutes=5)

SCOPE = (
    "Attests: the journal rows inside the sealed range (each entry with its postings) are "
    "unaltered since they were sealed: none was changed, removed or inserted. "
    "Does not attest: that a deal existed once its records are deleted 7 days after "
    "sealing; rows after the sealed range; rows before first sealing (anything before "
    "sealed.from, and any change made to a row before it was sealed); protection against "
    "the operator, who runs the database, the sealer and this verdict; completeness of "
    "every money movement: the hold taken at negotiation open and its release are not "
    "journalled. Also checked, as of each run: every wallet's balance equals the sum of its "
    "journal postings, its held amount the sum of its active holds, and the negotiation "
    "threads' holds agree with the threads' states."
)

_HEX64 = re.compile(r"[0-9a-f]{64}")


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class StoredProblem(_Strict):
    sequence: int | None
    kind: str = Field(min_length=1, max_length=40)
    detail: str = Field(min_length=1, max_length=500)


class _StoredHead(_Strict):
    sequence: int = Field(ge=1)
    hash: str = Field(pattern=_HEX64.pattern)


class _StoredRange(_Strict):
    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    from_: int | None = Field(alias="from", ge=1)
    through: int = Field(ge=2)


class _StoredMark(_Strict):
    sequence: int = Field(ge=1)
    hash: str = Field(pattern=_HEX64.pattern)
    # RFC 3339 with microseconds; null when taken over from a verdict stored before marks.
    sealed_at: str | None


class _StoredDocument(_Strict):
    status: Literal["ok", "broken"]
    # Kept as text and parsed when served: an unreadable time makes the verdict stale,
    # not unavailable (docs/interface.md §19).
    computed_at: str
    head: _StoredHead | None
    sealed: _StoredRange | None
    problems: list[StoredProblem] = Field(max_length=MAX_LISTED_PROBLEMS)
    problem_count: int = Field(ge=0)
    # Absent from verdicts stored before marks were kept.
    mark: _StoredMark | None = None


@dataclass(frozen=True)
class Mark:
    """The chain's high-water mark: a checkpoint (sequence, hash, sealed_at) that every
    later run must still find. sealed_at is None for a mark taken over from the head of a
    verdict stored before marks were kept."""

    sequence: int
    hash: str
    sealed_at: datetime | None


class VerdictUnreadable(Exception):
    """A verdict is stored but in no recognised state, so its mark is unknown."""


@dataclass(frozen=True)
class Served:
    """What the route answers: 200 with the verdict, or 404/503 `unavailable`."""

    status_code: int
    body: dict[str, Any]


def _unavailable(status_code: int, detail: str) -> Served:
    return Served(status_code, {"status": "unavailable", "detail": detail})


NOT_COMPUTED = "No ledger verdict has been computed yet."
NOTHING_SEALED = "Nothing in the journal is sealed yet."
UNREADABLE = "The stored ledger verdict cannot be read."


def _parse_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def is_stale(computed_at: datetime | None, *, now: datetime) -> bool:
    if computed_at is None:
        return True
    return now - computed_at > STALE_AFTER or computed_at - now > FUTURE_TOLERANCE


def _decode(text: str) -> _StoredDocument | None:
    """The stored document if it is in a recognised state, else None."""
    try:
        doc = _StoredDocument.model_validate_json(text)
    except (ValidationError, ValueError):
        return None
    listed, count = len(doc.problems), doc.problem_count
    if doc.status == "ok" and count != 0:
        return None
    if doc.status == "broken" and (count == 0 or listed != min(count, MAX_LISTED_PROBLEMS)):
        return None
    if (doc.head is None) != (doc.sealed is None):
        return None
    if doc.head is not None and doc.sealed is not None:
        if doc.sealed.through != doc.head.sequence + 1:
            return None
        if doc.sealed.from_ is not None and doc.sealed.from_ > doc.head.sequence:
            return None
    return doc


def _read_document(session: Session) -> str | None:
    return session.scalar(select(StoredVerdict.document).where(StoredVerdict.id == VERDICT_ID))


def serve(session: Session, *, now: datetime) -> Served:
    try:
        text = _read_document(session)
    except SQLAlchemyError:
        session.rollback()
        return _unavailable(503, UNREADABLE)
    if text is None:
        return _unavailable(404, NOT_COMPUTED)
    doc = _decode(text)
    if doc is None:
        return _unavailable(503, UNREADABLE)
    if doc.head is None or doc.sealed is None:
        return _unavailable(404, NOTHING_SEALED)
    computed_at = _parse_time(doc.computed_at)
    return Served(
        200,
        {
            "status": doc.status,
            "scope": SCOPE,
            "computed_at": None if computed_at is None else clock.rfc3339(computed_at),
            "stale": is_stale(computed_at, now=now),
            "head": {
                "hash": doc.head.hash,
                "sequence": doc.head.sequence,
                "hash_algorithm": HASH_ALGORITHM,
            },
            "sealed": {"from": doc.sealed.from_, "through": doc.sealed.through},
            "problems": [p.model_dump() for p in doc.problems],
            "problem_count": doc.problem_count,
        },
    )


def recorded_mark(session: Session) -> Mark | None:
    """The mark the stored verdict keeps: None before the first verdict or while nothing
    was ever sealed; raises VerdictUnreadable when the stored document cannot be read."""
    text = _read_document(session)
    if text is None:
        return None
    doc = _decode(text)
    if doc is None:
        raise VerdictUnreadable()
    if doc.mark is not None:
        sealed_at = None
        if doc.mark.sealed_at is not None:
            sealed_at = _parse_time(doc.mark.sealed_at)
            if sealed_at is None:
                raise VerdictUnreadable()
        return Mark(doc.mark.sequence, doc.mark.hash, sealed_at)
    if doc.head is not None:
        # Stored before marks were kept: its head was the latest checkpoint then.
        return Mark(doc.head.sequence, doc.head.hash, None)
    return None


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def latest_verdict_status(session: Session) -> str | None:
    """The status GET /v1/ledger/verify would serve now: "ok", "broken", or "unavailable"
    (stored but unreadable, or nothing sealed); None before the first verdict. For
    metrics; staleness is not considered."""
    served = serve(session, now=clock.now())
    if served.status_code == 404 and served.body["detail"] == NOT_COMPUTED:
        return None
    return str(served.body["status"])


def encode(
    *,
    computed_at: datetime,
    head: tuple[int, str] | None,
    problems: list[StoredProblem],
    problem_count: int,
    mark: Mark | None = None,
) -> str:
    document = {
        "status": "broken" if problem_count else "ok",
        # Full precision here; served with whole seconds like every other time.
        "computed_at": _timestamp(computed_at),
        "head": None if head is None else {"sequence": head[0], "hash": head[1]},
        # The chain starts at the journal's first row, so `from` is always the start.
        "sealed": None if head is None else {"from": None, "through": head[0] + 1},
        "problems": [p.model_dump() for p in problems[:MAX_LISTED_PROBLEMS]],
        "problem_count": problem_count,
        "mark": None
        if mark is None
        else {
            "sequence": mark.sequence,
            "hash": mark.hash,
            "sealed_at": None if mark.sealed_at is None else _timestamp(mark.sealed_at),
        },
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def store(session: Session, document: str) -> None:
    """Replace the one stored verdict (the caller commits)."""
    table = StoredVerdict.__table__
    replaced = session.execute(
        update(table).where(table.c.id == VERDICT_ID).values(document=document)
    ).rowcount
    if replaced:
        return
    try:
        with session.begin_nested():
            session.execute(table.insert().values(id=VERDICT_ID, document=document))
    except IntegrityError:
        # Another sealer stored the first verdict meanwhile: replace it.
        session.execute(update(table).where(table.c.id == VERDICT_ID).values(document=document))
