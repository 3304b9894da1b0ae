"""The chain may only grow: a verdict keeps the latest checkpoint it saw as a high-water
mark, and a later run that no longer finds it reports `chain_regressed`."""

from __future__ import annotations

from agent_broker.ledger import sealer
from tests.support.ledger import (
    checkpoints,
    journal,
    run_sealer,
    seal_now,
    seals,
    store_verdict,
    tamper,
    verdict,
)

PATH = "/v1/ledger/verify"
FORGET_CHAIN = ("DELETE FROM ledger_checkpoints", "DELETE FROM ledger_seals")


def _problems(client) -> list[tuple[int | None, str]]:
    body = client.get(PATH).json()
    assert body["problem_count"] == len(body["problems"])
    return [(p["sequence"], p["kind"]) for p in body["problems"]]


def test_the_mark_follows_the_latest_checkpoint_and_is_never_served(client, app):
    journal(app, 2)
    seal_now(app)
    journal(app, 1)
    seal_now(app)
    mark = verdict(app)["mark"]
    assert (mark["sequence"], mark["hash"]) == checkpoints(app)[-1]
    assert mark["sealed_at"].endswith("Z")
    body = client.get(PATH).json()
    assert body["status"] == "ok"
    assert "mark" not in body


def test_a_chain_resealed_from_genesis_over_unaltered_rows_is_reported(client, app):
    journal(app, 3)
    seal_now(app)
    before = seals(app)
    tamper(app, *FORGET_CHAIN)
    run = seal_now(app)  # seals every row again: the same hashes, a new checkpoint
    assert run.sealed == 3 and seals(app) == before
    # The chain on its own verifies: only the mark tells.
    assert sealer.verify(app.state.context.db.engine).problems == []
    assert run.status == "broken"
    body = client.get(PATH).json()
    assert body["problems"] == [
        {
            "sequence": 3,
            "kind": "chain_regressed",
            "detail": "the checkpoint at row 3 that an earlier run recorded is gone or was "
            "replaced: the chain was re-sealed",
        }
    ]
    # The old mark is kept: the verdict stays broken.
    journal(app, 1)
    assert seal_now(app).status == "broken"
    assert _problems(client) == [(3, "chain_regressed")]


def test_a_row_altered_then_resealed_from_genesis_is_reported(client, app):
    journal(app, 3)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'refund' WHERE sequence = 2", *FORGET_CHAIN)
    seal_now(app)
    assert sealer.verify(app.state.context.db.engine).problems == []
    assert _problems(client) == [(3, "chain_regressed")]


def test_a_head_that_went_back_is_reported(client, app):
    journal(app, 2)
    seal_now(app)
    journal(app, 2)
    seal_now(app)
    # Rows 3 and 4 removed with their seals and the checkpoint that covered them: what is
    # left is a well-formed chain ending at row 2.
    tamper(
        app,
        "DELETE FROM ledger_postings WHERE entry_sequence > 2",
        "DELETE FROM ledger_entries WHERE sequence > 2",
        "DELETE FROM ledger_seals WHERE sequence > 2",
        "DELETE FROM ledger_checkpoints WHERE sequence > 2",
    )
    assert sealer.verify(app.state.context.db.engine).problems == []
    run = run_sealer(app)
    assert (run.status, run.problem_count) == ("broken", 1)
    body = client.get(PATH).json()
    assert body["head"]["sequence"] == 2
    assert body["problems"][0]["detail"] == (
        "the chain's last checkpoint went back from row 4 to row 2: "
        "seals or checkpoints were removed"
    )
    assert _problems(client) == [(4, "chain_regressed")]


def test_a_verdict_stored_before_marks_were_kept_lends_its_head_as_the_mark(client, app):
    journal(app, 2)
    seal_now(app)
    legacy = verdict(app)
    del legacy["mark"]
    store_verdict(app, legacy)
    assert run_sealer(app).status == "ok"  # the chain still has the head it recorded
    store_verdict(app, legacy)
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 2", *FORGET_CHAIN)
    seal_now(app)
    assert _problems(client) == [(2, "chain_regressed")]
    assert verdict(app)["mark"]["sealed_at"] is None  # the legacy mark is kept


def test_an_unreadable_previous_verdict_is_reported_once(client, app):
    journal(app, 2)
    seal_now(app)
    store_verdict(app, "not a verdict")
    run = run_sealer(app)
    assert (run.status, run.problem_count) == ("broken", 1)
    assert _problems(client) == [(None, "verdict_unreadable")]
    # That run stored a readable verdict with a fresh mark again.
    assert run_sealer(app).status == "ok"


def test_an_unreadable_mark_time_makes_the_verdict_unreadable(client, app):
    journal(app, 1)
    seal_now(app)
    stored = verdict(app)
    store_verdict(app, {**stored, "mark": {**stored["mark"], "sealed_at": "yesterday"}})
    run_sealer(app)
    assert _problems(client) == [(None, "verdict_unreadable")]
