from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select, update
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.jobs.models import JobLease
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import LEASE_TTL, run_job
from agent_broker.ledger.models import Hold, LedgerAccount
from agent_broker.ledger.service import take_hold
from tests.support.accounts import fund, register

HOLD = 1_000_000


def lapsed_hold(app, client) -> str:
    """A fresh account's hold that lapses one minute from now; returns the hold id."""
    agent = register(client)
    fund(app, agent.account_id, HOLD)
    with app.state.context.db.writer() as session:
        now = clock.now()
        hold_id = take_hold(
            session,
            agent.account_id,
            HOLD,
            reference=f"test-{agent.account_id}",
            expires_at=now + timedelta(minutes=1),
            now=now,
        )
        session.commit()

    clock.advance(timedelta(minutes=2))
    return hold_id


def hold_state(app, hold_id: str) -> tuple[str, int]:
    """The hold's status and the amount its wallet still counts as held."""
    with app.state.context.db.reader() as session:
        hold = session.get(Hold, hold_id)
        held = session.scalar(
            select(LedgerAccount.held_micro).where(LedgerAccount.code == hold.wallet_code)
        )
        return hold.status, held


def lease(app, name: str) -> JobLease:
    with app.state.context.db.reader() as session:
        return session.get(JobLease, name)


def test_jobs_list_prints_each_job_name_first_then_its_period():
    result = CliRunner().invoke(cli, ["jobs", "list"])
    assert result.exit_code == 0
    rows = [line.split("\t") for line in result.output.strip().splitlines()]
    assert [(name, period) for name, period, _ in rows] == [
        ("expire-listings", "300s"),
        ("expire-threads", "300s"),
        ("expire-holds", "300s"),
        ("purge-deals", "900s"),
        ("escrow-deadlines", "300s"),
        ("expire-idempotency-keys", "3600s"),
        ("forget-events", "3600s"),
        ("forget-spent-tokens", "3600s"),
        ("ledger-seal", "3600s"),
        ("deliver-webhooks", "15s"),
        ("certification-checks", "3600s"),
        ("certification-badges", "86400s"),
        ("health-sample", "300s"),
    ]
    assert all(description for _, _, description in rows)


def test_a_job_held_by_another_runner_does_not_run(app, client):
    context = app.state.context
    db = context.db
    first = lapsed_hold(app, client)
    assert run_job(context, "expire-holds") == "settled 1 lapsed holds"
    assert hold_state(app, first) == ("lapsed", 0)

    second = lapsed_hold(app, client)
    with db.writer() as session:
        session.execute(
            update(JobLease)
            .where(JobLease.name == "expire-holds")
            .values(holder="other-replica", lease_until=clock.now() + LEASE_TTL)
        )
        session.commit()
    assert run_job(context, "expire-holds") is None
    assert hold_state(app, second) == ("active", HOLD)
    assert lease(app, "expire-holds").holder == "other-replica"

    clock.advance(LEASE_TTL + timedelta(seconds=1))  # a crashed holder's lease runs out
    assert run_job(context, "expire-holds") == "settled 1 lapsed holds"
    assert hold_state(app, second) == ("lapsed", 0)
    taken = lease(app, "expire-holds")
    assert taken.holder != "other-replica"
    assert taken.lease_until is None  # released when the run finished
    assert taken.last_outcome == "settled 1 lapsed holds"


def test_a_scheduled_run_waits_for_the_period(app, client):
    context = app.state.context
    first = lapsed_hold(app, client)
    assert run_job(context, "expire-holds", only_if_due=True) == "settled 1 lapsed holds"
    assert hold_state(app, first) == ("lapsed", 0)

    second = lapsed_hold(app, client)  # two minutes later: the period has not elapsed
    assert run_job(context, "expire-holds", only_if_due=True) is None
    assert hold_state(app, second) == ("active", HOLD)

    clock.advance(JOBS["expire-holds"].period)
    assert run_job(context, "expire-holds", only_if_due=True) == "settled 1 lapsed holds"
    assert hold_state(app, second) == ("lapsed", 0)


def test_jobs_run_from_the_command_line(database_url, monkeypatch, app, client):
    hold_id = lapsed_hold(app, client)
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    result = CliRunner().invoke(cli, ["jobs", "run", "expire-holds"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "expire-holds: settled 1 lapsed holds\n"  # the outcome alone
    [logged] = [json.loads(line) for line in result.stderr.splitlines()]
    assert (logged["event"], logged["job"]) == ("job_ran", "expire-holds")
    assert hold_state(app, hold_id) == ("lapsed", 0)
    assert lease(app, "expire-holds").last_outcome == "settled 1 lapsed holds"

    unknown = CliRunner().invoke(cli, ["jobs", "run", "no-such-job"])
    assert unknown.exit_code == 2
    assert "unknown job 'no-such-job'" in unknown.output


def test_a_lapsed_hold_is_given_back_not_charged(app, client):
    hold_id = lapsed_hold(app, client)
    assert run_job(app.state.context, "expire-holds") == "settled 1 lapsed holds"
    with app.state.context.db.reader() as session:
        hold = session.get(Hold, hold_id)
        wallet = session.get(LedgerAccount, hold.wallet_code)
        assert hold.settled_at is not None
        assert (wallet.total_micro, wallet.held_micro) == (HOLD, 0)
