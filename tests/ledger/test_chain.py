"""The canonical encoding and link hash of the journal's hash chain (pure functions)."""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent_broker.ledger.chain import (
    GENESIS_HASH,
    SealedEntry,
    SealedPosting,
    canonical_bytes,
    canonical_entry,
    link_hash,
)

ENTRY = SealedEntry(
    sequence=7,
    id="5f0c7c2e-2d0c-4e8a-9a57-0d8d6f1b3c11",
    kind="deal_fee",
    memo="Deal fee — thread 42",
    reference="thread:42",
    real_money=False,
    created_at=datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
    postings=(
        SealedPosting(11, "wallet:a", -1_000_000),
        SealedPosting(12, "system:fees", 1_000_000),
    ),
)


def test_the_encoding_is_sorted_compact_json_with_integer_money_and_rfc3339_time():
    document = canonical_bytes({"v": 1, "prev": GENESIS_HASH, "entry": canonical_entry(ENTRY)})
    assert (
        document
        == (
            '{"entry":{"created_at":"2026-03-01T12:30:05.123456Z","id":'
            '"5f0c7c2e-2d0c-4e8a-9a57-0d8d6f1b3c11","kind":"deal_fee",'
            '"memo":"Deal fee — thread 42","postings":[{"account_code":"wallet:a",'
            '"amount_micro":-1000000,"id":11},{"account_code":"system:fees",'
            '"amount_micro":1000000,"id":12}],"real_money":false,"reference":"thread:42",'
            f'"sequence":7}},"prev":"{GENESIS_HASH}","v":1}}'
        ).encode()
    )
    assert link_hash(GENESIS_HASH, ENTRY) == hashlib.sha256(document).hexdigest()


def test_the_hash_does_not_depend_on_posting_order_or_time_zone():
    shuffled = dataclasses.replace(ENTRY, postings=ENTRY.postings[::-1])
    elsewhere = dataclasses.replace(
        ENTRY, created_at=ENTRY.created_at.astimezone(timezone(timedelta(hours=-5)))
    )
    assert link_hash(GENESIS_HASH, shuffled) == link_hash(GENESIS_HASH, ENTRY)
    assert link_hash(GENESIS_HASH, elsewhere) == link_hash(GENESIS_HASH, ENTRY)


@pytest.mark.parametrize(
    "change",
    [
        {"sequence": 8},
        {"id": "5f0c7c2e-2d0c-4e8a-9a57-0d8d6f1b3c12"},
        {"kind": "refund"},
        {"memo": "Deal fee - thread 42"},
        {"reference": None},
        {"real_money": True},
        {"created_at": ENTRY.created_at + timedelta(microseconds=1)},
        {"postings": ENTRY.postings[:1]},
        {"postings": (*ENTRY.postings, SealedPosting(13, "system:fees", 0))},
        {"postings": (SealedPosting(11, "wallet:b", -1_000_000), ENTRY.postings[1])},
        {"postings": (SealedPosting(11, "wallet:a", -1_000_001), ENTRY.postings[1])},
        {"postings": (SealedPosting(10, "wallet:a", -1_000_000), ENTRY.postings[1])},
    ],
)
def test_any_change_to_the_entry_or_its_postings_changes_the_hash(change):
    assert link_hash(GENESIS_HASH, dataclasses.replace(ENTRY, **change)) != link_hash(
        GENESIS_HASH, ENTRY
    )


def test_the_hash_chains_on_the_previous_link():
    assert link_hash("1" * 64, ENTRY) != link_hash(GENESIS_HASH, ENTRY)


def test_money_must_be_an_integer():
    floated = dataclasses.replace(ENTRY, postings=(SealedPosting(11, "wallet:a", 1.0),))
    with pytest.raises(TypeError):
        link_hash(GENESIS_HASH, floated)  # type: ignore[arg-type]
