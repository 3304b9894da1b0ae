"""The hash chain over the journal: the canonical encoding of an entry with its postings,
and the link hash that ties each sealed entry to the one sealed before it.

link_hash = SHA-256(canonical JSON of {"v", "prev", "entry"}), hex. The canonical JSON has
sorted keys, no whitespace and UTF-8 text; money is integer micro-USD and times are RFC
3339 UTC with microseconds, so the same row gives the same bytes on SQLite and PostgreSQL
and any change to a field, a posting, or the order of the chain changes the hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

HASH_ALGORITHM = "sha256"
ENCODING_VERSION = 1
# The link before the first sealed entry.
GENESIS_HASH = "0" * 64
GENESIS_SEQUENCE = 0


@dataclass(frozen=True)
class SealedPosting:
    id: int
    account_code: str
    amount_micro: int


@dataclass(frozen=True)
class SealedEntry:
    """A journal entry as the chain sees it."""

    sequence: int
    id: str
    kind: str
    memo: str
    reference: str | None
    real_money: bool
    created_at: datetime
    postings: tuple[SealedPosting, ...]


def _timestamp(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise ValueError("journal times are aware UTC")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _integer(value: object) -> int:
    # bool is an int subclass, and a float would make the encoding depend on formatting.
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def canonical_entry(entry: SealedEntry) -> dict[str, object]:
    return {
        "sequence": _integer(entry.sequence),
        "id": entry.id,
        "kind": entry.kind,
        "memo": entry.memo,
        "reference": entry.reference,
        "real_money": bool(entry.real_money),
        "created_at": _timestamp(entry.created_at),
        "postings": [
            {
                "id": _integer(p.id),
                "account_code": p.account_code,
                "amount_micro": _integer(p.amount_micro),
            }
            for p in sorted(entry.postings, key=lambda p: p.id)
        ],
    }


def canonical_bytes(document: object) -> bytes:
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def link_hash(prev_hash: str, entry: SealedEntry) -> str:
    document = {"v": ENCODING_VERSION, "prev": prev_hash, "entry": canonical_entry(entry)}
    return hashlib.sha256(canonical_bytes(document)).hexdigest()


def group_postings(
    rows: Iterable[tuple[int, int, str, int]],
) -> dict[int, list[SealedPosting]]:
    """(entry_sequence, id, account_code, amount_micro) rows by entry sequence."""
    grouped: dict[int, list[SealedPosting]] = {}
    for entry_sequence, posting_id, code, amount in rows:
        grouped.setdefault(entry_sequence, []).append(SealedPosting(posting_id, code, amount))
    return grouped
