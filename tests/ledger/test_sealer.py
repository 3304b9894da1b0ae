"""The sealer: which rows it seals, the chain and checkpoints it writes, the verdict it
stores, and that tampering with sealed rows or checkpoints is reported by the next run."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import run_job
from agent_broker.ledger import books, sealer, verdict, verification
from agent_broker.ledger.chain import GENESIS_HASH, SealedEntry, SealedPosting, link_hash
from agent_broker.ledger.journal import post_entry
from agent_broker.ledger.models import JournalEntry, Posting
from tests.support.ledger import (
    PAST_MARGIN,
    checkpoints,
    journal,
    run_sealer,
    seal_now,
    seals,
    tamper,
)


def _served(app) -> dict:
    with app.state.context.db.reader() as session:
        served = verdict.serve(session, now=clock.now())
    return {"code": served.status_code, **served.body}


def _problems(app) -> list[tuple[int | None, str]]:
    found = sealer.verify(app.state.context.db.engine)
    return [(p.sequence, p.kind) for p in found.problems]


def _entry(app, sequence: int) -> SealedEntry:
    with app.state.context.db.reader() as session:
        row = session.get(JournalEntry, sequence)
        postings = session.execute(
            select(Posting.id, Posting.account_code, Posting.amount_micro)
            .where(Posting.entry_sequence == sequence)
            .order_by(Posting.id)
        ).all()
    return SealedEntry(
        sequence=row.sequence,
        id=row.id,
        kind=row.kind,
        memo=row.memo,
        reference=row.reference,
        real_money=row.real_money,
        created_at=row.created_at,
        postings=tuple(SealedPosting(*p) for p in postings),
    )


# --- sealing ----------------------------------------------------------------------------


def test_rows_newer_than_the_safety_margin_are_left_unsealed(app):
    journal(app, 2)
    first = run_sealer(app)
    assert first.sealed == 0
    assert seals(app) == []
    clock.advance(PAST_MARGIN)
    later = journal(app, 1)
    second = run_sealer(app)
    assert second.sealed == 2
    assert [s[0] for s in seals(app)] == [1, 2]
    clock.advance(PAST_MARGIN)
    assert run_sealer(app).sealed == 1
    assert [s[0] for s in seals(app)] == [1, 2, *later]


def test_the_run_stops_at_the_first_row_inside_the_margin(app):
    """A younger row is never skipped over: sealing past it would leave it inside the
    sealed range without a seal."""
    journal(app, 1)
    clock.advance(PAST_MARGIN)
    journal(app, 1)
    # The third row claims an older time than the second (a request that took a while).
    with app.state.context.db.writer() as session:
        post_entry(
            session,
            kind="t",
            memo="slow request",
            postings=[(books.OPERATOR, -1), (books.FEES, 1)],
            now=clock.now() - 2 * PAST_MARGIN,
        )
        session.commit()
    assert run_sealer(app).sealed == 1
    assert [s[0] for s in seals(app)] == [1]


def test_each_seal_chains_the_entry_and_its_postings_to_the_previous_seal(app):
    journal(app, 3)
    run = seal_now(app)
    assert run.sealed == 3 and run.status == "ok"
    chain = seals(app)
    assert [(s[0], s[1]) for s in chain] == [(1, 0), (2, 1), (3, 2)]
    previous = GENESIS_HASH
    for sequence, _prev, digest in chain:
        assert digest == link_hash(previous, _entry(app, sequence))
        previous = digest
    assert checkpoints(app) == [(3, chain[-1][2])]


def test_a_checkpoint_records_each_run_that_sealed_something(app):
    journal(app, 2)
    seal_now(app)
    seal_now(app)  # nothing new: no checkpoint
    journal(app, 1)
    seal_now(app)
    chain = seals(app)
    assert checkpoints(app) == [(2, chain[1][2]), (3, chain[2][2])]
    with app.state.context.db.reader() as session:
        sealed_at = session.execute(text("SELECT sealed_at FROM ledger_checkpoints")).all()
    assert len(sealed_at) == 2


def test_the_verdict_is_stored_and_refreshed_on_every_run_even_with_nothing_new(app):
    journal(app, 2)
    seal_now(app)
    first = _served(app)
    assert first["code"] == 200 and first["status"] == "ok"
    assert first["head"]["sequence"] == 2
    assert first["sealed"] == {"from": None, "through": 3}
    clock.advance(timedelta(hours=1))
    assert run_sealer(app).sealed == 0
    second = _served(app)
    assert second["computed_at"] > first["computed_at"]
    assert second["head"] == first["head"]


def test_a_verdict_with_nothing_sealed_is_stored_as_such(app):
    journal(app, 1)
    run_sealer(app)  # the row is inside the margin
    served = _served(app)
    assert served["code"] == 404 and served["status"] == "unavailable"
    with app.state.context.db.reader() as session:
        assert sealer.latest_verdict_status(session) == "unavailable"


def test_latest_verdict_status_follows_the_stored_verdict(app):
    with app.state.context.db.reader() as session:
        assert sealer.latest_verdict_status(session) is None
    journal(app, 2)
    seal_now(app)
    with app.state.context.db.reader() as session:
        assert sealer.latest_verdict_status(session) == "ok"
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 1")
    run_sealer(app)
    with app.state.context.db.reader() as session:
        assert sealer.latest_verdict_status(session) == "broken"


def test_sealing_continues_in_batches(app, monkeypatch):
    monkeypatch.setattr(sealer, "SEAL_BATCH", 3)
    monkeypatch.setattr(verification, "VERIFY_BATCH", 2)
    journal(app, 8)
    run = seal_now(app)
    assert (run.sealed, run.status) == (8, "ok")
    assert [c[0] for c in checkpoints(app)] == [3, 6, 8]


@pytest.mark.parametrize("table", ["ledger_seals", "ledger_checkpoints"])
@pytest.mark.parametrize("statement", ["UPDATE {t} SET hash = hash", "DELETE FROM {t}"])
def test_seals_and_checkpoints_are_append_only_in_the_database(app, table, statement):
    journal(app, 2)
    seal_now(app)
    with app.state.context.db.writer() as session, pytest.raises(DBAPIError):
        session.execute(text(statement.format(t=table)))
    assert len(seals(app)) == 2 and len(checkpoints(app)) == 1


# --- overlapping runs -------------------------------------------------------------------


def test_a_run_that_lost_the_race_writes_nothing_and_breaks_nothing(app, monkeypatch):
    journal(app, 3)
    seal_now(app)
    journal(app, 2)
    clock.advance(PAST_MARGIN)
    # This run planned from the genesis head, as if another run sealed meanwhile: its
    # seals collide with the committed ones on the unique chain positions.
    monkeypatch.setattr(sealer, "_head", lambda session: sealer._Head(0, GENESIS_HASH))
    assert sealer.seal(app.state.context.db.engine, now=clock.now()) == 0
    monkeypatch.undo()
    assert [s[0] for s in seals(app)] == [1, 2, 3]
    assert run_sealer(app).sealed == 2
    assert _problems(app) == []


def test_overlapping_runs_seal_each_row_once(app):
    journal(app, 40)
    clock.advance(PAST_MARGIN)
    engine, now, results, errors = app.state.context.db.engine, clock.now(), [], []

    def seal() -> None:
        try:
            results.append(sealer.seal(engine, now=now))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=seal) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(results) == 40
    assert [s[0] for s in seals(app)] == list(range(1, 41))
    assert _problems(app) == []


# --- tampering --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledger_entries SET memo = 'refund' WHERE sequence = 2",
        "UPDATE ledger_entries SET real_money = NOT real_money WHERE sequence = 2",
        "UPDATE ledger_entries SET reference = NULL WHERE sequence = 2",
        "UPDATE ledger_postings SET amount_micro = amount_micro * 10 WHERE entry_sequence = 2",
        "UPDATE ledger_postings SET account_code = 'system:grants'"
        " WHERE entry_sequence = 2 AND amount_micro > 0",
    ],
)
def test_an_altered_sealed_row_is_reported_by_its_sequence(app, statement):
    journal(app, 3)
    seal_now(app)
    tamper(app, statement)
    run = run_sealer(app)
    assert (run.status, run.problem_count) == ("broken", 1)
    served = _served(app)
    assert served["status"] == "broken"
    assert [(p["sequence"], p["kind"]) for p in served["problems"]] == [(2, "row_altered")]
    assert "2" in served["problems"][0]["detail"]


def test_an_altered_created_at_is_reported(app):
    journal(app, 2)
    seal_now(app)
    with app.state.context.db.reader() as session:
        created = session.get(JournalEntry, 1).created_at
    moved = (created - timedelta(microseconds=1)).replace(tzinfo=None)
    tamper(app, "UPDATE ledger_entries SET created_at = :moved WHERE sequence = 1", moved=moved)
    run_sealer(app)
    assert _problems(app) == [(1, "row_altered")]


def test_a_deleted_sealed_row_is_reported_by_its_sequence(app):
    journal(app, 3)
    seal_now(app)
    tamper(
        app,
        "DELETE FROM ledger_postings WHERE entry_sequence = 2",
        "DELETE FROM ledger_entries WHERE sequence = 2",
    )
    assert run_sealer(app).status == "broken"
    assert _problems(app) == [(2, "row_missing")]


def test_a_row_deleted_with_its_seal_is_still_named(app):
    journal(app, 3)
    seal_now(app)
    tamper(
        app,
        "DELETE FROM ledger_postings WHERE entry_sequence = 2",
        "DELETE FROM ledger_entries WHERE sequence = 2",
        "DELETE FROM ledger_seals WHERE sequence = 2",
    )
    run_sealer(app)
    assert _problems(app) == [(2, "row_missing")]


def test_a_removed_seal_is_reported_even_if_the_row_is_intact(app):
    journal(app, 3)
    seal_now(app)
    tamper(app, "DELETE FROM ledger_seals WHERE sequence = 2")
    run_sealer(app)
    assert _problems(app) == [(2, "row_unsealed"), (2, "seal_missing")]


def test_a_posting_inserted_into_a_sealed_entry_is_reported(app):
    journal(app, 3)
    seal_now(app)
    tamper(
        app,
        "INSERT INTO ledger_postings (entry_sequence, account_code, amount_micro)"
        " VALUES (3, 'system:fees', 0)",
    )
    run_sealer(app)
    assert _problems(app) == [(3, "row_altered")]


def test_a_row_inserted_inside_the_sealed_range_is_reported(app):
    journal(app, 3)
    seal_now(app)
    # The sealed range starts at the start of the journal, so below the first row is in it.
    tamper(
        app,
        "INSERT INTO ledger_entries (sequence, id, kind, memo, reference, real_money,"
        " created_at) VALUES (0, 'forged', 'test_adjustment', 'forged', NULL, :no, :at)",
        "INSERT INTO ledger_postings (entry_sequence, account_code, amount_micro)"
        " VALUES (0, 'system:operator', -5), (0, 'system:fees', 5)",
        no=False,
        at=(clock.now() - timedelta(days=1)).replace(tzinfo=None),
    )
    run = run_sealer(app)
    assert run.status == "broken"
    assert _problems(app) == [(0, "row_unsealed")]
    served = _served(app)
    assert served["problems"][0]["sequence"] == 0


def test_a_row_inserted_with_a_negative_sequence_is_reported_and_served(app):
    journal(app, 1)
    seal_now(app)
    tamper(
        app,
        "INSERT INTO ledger_entries (sequence, id, kind, memo, reference, real_money,"
        " created_at) VALUES (-5, 'forged', 't', 'forged', NULL, :no, :at)",
        no=False,
        at=(clock.now() - timedelta(days=1)).replace(tzinfo=None),
    )
    run_sealer(app)
    served = _served(app)
    assert served["code"] == 200
    assert [(p["sequence"], p["kind"]) for p in served["problems"]] == [(-5, "row_unsealed")]


def test_a_row_inserted_into_a_gap_of_the_sealed_range_is_reported(app):
    if app.state.context.settings.is_sqlite:
        pytest.skip("SQLite never leaves a gap in the journal's sequence")
    journal(app, 1)
    with app.state.context.db.writer() as session:  # a rolled-back write leaves its value unused
        post_entry(
            session,
            kind="t",
            memo="refused",
            postings=[(books.OPERATOR, -1), (books.FEES, 1)],
            now=clock.now(),
        )
        session.send_queued()  # the entry reaches the database (PostgreSQL defers it)
        session.rollback()
    journal(app, 1)
    assert seal_now(app).sealed == 2
    assert [(s[0], s[1]) for s in seals(app)] == [(1, 0), (3, 1)]
    tamper(
        app,
        "INSERT INTO ledger_entries (sequence, id, kind, memo, reference, real_money,"
        " created_at) VALUES (2, 'forged', 't', 'forged', NULL, false, :at)",
        at=(clock.now() - timedelta(days=1)).replace(tzinfo=None),
    )
    run_sealer(app)
    assert _problems(app) == [(2, "row_unsealed")]


def test_problems_are_capped_at_20_with_the_true_count(app):
    journal(app, 25)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'rewritten'")
    run = run_sealer(app)
    assert (run.status, run.problem_count) == ("broken", 25)
    served = _served(app)
    assert served["problem_count"] == 25
    assert len(served["problems"]) == 20
    assert [p["sequence"] for p in served["problems"]] == list(range(1, 21))


def test_the_verdict_stays_broken_on_later_runs_and_new_rows_are_still_sealed(app):
    journal(app, 2)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 1")
    journal(app, 2)
    run = seal_now(app)
    assert (run.sealed, run.status) == (2, "broken")
    assert _problems(app) == [(1, "row_altered")]
    assert seal_now(app).status == "broken"


# --- checkpoints ------------------------------------------------------------------------


def test_a_tampered_checkpoint_is_reported(app):
    journal(app, 2)
    seal_now(app)
    journal(app, 1)
    seal_now(app)
    tamper(app, f"UPDATE ledger_checkpoints SET hash = '{'f' * 64}' WHERE sequence = 2")
    assert run_sealer(app).status == "broken"
    assert _problems(app) == [(2, "checkpoint_mismatch")]


def test_a_rewritten_chain_is_caught_by_the_checkpoints(app):
    """A DBA who alters a row and recomputes every later seal passes the link checks;
    the checkpoints the earlier runs left do not match the new chain."""
    journal(app, 2)
    seal_now(app)
    journal(app, 2)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'rewritten' WHERE sequence = 2")
    previous = seals(app)[0][2]
    rewritten = []
    for sequence in (2, 3, 4):
        previous = link_hash(previous, _entry(app, sequence))
        rewritten.append(f"UPDATE ledger_seals SET hash = '{previous}' WHERE sequence = {sequence}")
    tamper(app, *rewritten)
    run_sealer(app)
    assert _problems(app) == [(2, "checkpoint_mismatch"), (4, "checkpoint_mismatch")]


def test_removed_checkpoints_are_reported(app):
    journal(app, 2)
    seal_now(app)
    tamper(app, "DELETE FROM ledger_checkpoints")
    assert run_sealer(app).status == "broken"
    assert _problems(app) == [(2, "checkpoint_missing")]


def test_a_seal_beyond_the_last_checkpoint_is_reported(app):
    journal(app, 2)
    seal_now(app)
    tamper(app, f"INSERT INTO ledger_seals VALUES (7, 2, '{'a' * 64}')")
    found = sealer.verify(app.state.context.db.engine)
    assert [(p.sequence, p.kind) for p in found.problems] == [(7, "seal_outside_range")]


def test_tampering_is_not_served_until_the_sealer_runs_again(app):
    journal(app, 2)
    seal_now(app)
    tamper(app, "UPDATE ledger_entries SET memo = 'x' WHERE sequence = 1")
    assert _served(app)["status"] == "ok"  # the route serves; it checks nothing
    run_sealer(app)
    assert _served(app)["status"] == "broken"


# --- PostgreSQL: sequence values of transactions still in flight -------------------------


# The sealer waits for every transaction in flight on the whole server before it passes a
# gap, other tests' too (another pytest-xdist worker's, another run's): where a test expects
# a gap passed, it waits longer than any of theirs lasts.
SETTLE_PATIENTLY_S = 60.0


def _in_flight_entry(app):  # type: ignore[no-untyped-def]
    session = app.state.context.db.writer()
    post_entry(
        session,
        kind="t",
        memo="in flight",
        postings=[(books.OPERATOR, -1), (books.FEES, 1)],
        now=clock.now(),
    )
    session.send_queued()  # the entry reaches the database (PostgreSQL defers it)
    return session


def test_the_chain_never_passes_a_value_held_by_a_transaction_in_flight(app, monkeypatch):
    if app.state.context.settings.is_sqlite:
        pytest.skip("SQLite serialises writers: a row in flight is above every committed one")
    monkeypatch.setattr(sealer, "SETTLE_TIMEOUT_S", 0.3)
    journal(app, 1)
    slow = _in_flight_entry(app)  # takes sequence 2 and stays open
    try:
        journal(app, 1)  # sequence 3, committed
        assert seal_now(app).sealed == 1
        assert [s[0] for s in seals(app)] == [1]
        slow.commit()
    finally:
        slow.close()
    assert seal_now(app).sealed == 2
    assert [(s[0], s[1]) for s in seals(app)] == [(1, 0), (2, 1), (3, 2)]
    assert _problems(app) == []


def test_a_row_committing_while_the_sealer_waits_is_sealed_in_its_place(app, monkeypatch):
    if app.state.context.settings.is_sqlite:
        pytest.skip("SQLite serialises writers: a row in flight is above every committed one")
    monkeypatch.setattr(sealer, "SETTLE_TIMEOUT_S", SETTLE_PATIENTLY_S)
    journal(app, 1)
    slow = _in_flight_entry(app)  # sequence 2
    journal(app, 1)  # sequence 3
    # The sealer meets the gap at 2, waits for the transactions in flight, then reads the
    # rows again: the late row is sealed at its place, not left behind inside the range.
    committer = threading.Timer(0.3, slow.commit)
    committer.start()
    try:
        assert seal_now(app).sealed == 3
    finally:
        committer.join()
        slow.close()
    assert [(s[0], s[1]) for s in seals(app)] == [(1, 0), (2, 1), (3, 2)]
    assert _problems(app) == []


def test_a_gap_left_by_a_rollback_is_passed_once_final(app, monkeypatch):
    if app.state.context.settings.is_sqlite:
        pytest.skip("SQLite never leaves a gap in the journal's sequence")
    monkeypatch.setattr(sealer, "SETTLE_TIMEOUT_S", SETTLE_PATIENTLY_S)
    journal(app, 1)
    slow = _in_flight_entry(app)
    slow.rollback()
    slow.close()
    journal(app, 1)
    assert seal_now(app).sealed == 2
    assert [(s[0], s[1]) for s in seals(app)] == [(1, 0), (3, 1)]
    assert _problems(app) == []


# --- the job ----------------------------------------------------------------------------


def test_ledger_seal_is_an_hourly_job(app):
    job = JOBS["ledger-seal"]
    assert job.period == timedelta(hours=1)
    journal(app, 2)
    clock.advance(PAST_MARGIN)
    outcome = run_job(app.state.context, "ledger-seal")
    assert outcome == "sealed 2 rows; verdict ok (0 problems)"
    assert _served(app)["head"]["sequence"] == 2


def test_ledger_seal_runs_from_the_command_line(database_url, monkeypatch, app):
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    result = CliRunner().invoke(cli, ["jobs", "run", "ledger-seal"])
    assert result.exit_code == 0, result.output
    assert "ledger-seal: sealed 0 rows; verdict ok" in result.output
    listed = CliRunner().invoke(cli, ["jobs", "list"])
    assert "ledger-seal\t3600s\t" in listed.output
