from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.jobs.models import JobLease
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import LEASE_TTL, run_job


def test_jobs_list_prints_each_job_name_first_then_its_period():
    result = CliRunner().invoke(cli, ["jobs", "list"])
    assert result.exit_code == 0
    lines = result.output.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == list(JOBS)
    assert lines[0].split("\t")[1] == f"{int(JOBS['expire-holds'].period.total_seconds())}s"


def test_a_job_held_by_another_runner_does_not_run(app):
    db = app.state.db
    assert run_job(db, app.state.settings, "expire-holds") is not None
    with db.writer() as session:
        session.execute(
            update(JobLease)
            .where(JobLease.name == "expire-holds")
            .values(holder="other-replica", lease_until=clock.now() + LEASE_TTL)
        )
        session.commit()
    assert run_job(db, app.state.settings, "expire-holds") is None
    clock.advance(LEASE_TTL + timedelta(seconds=1))  # a crashed holder's lease runs out
    assert run_job(db, app.state.settings, "expire-holds") is not None


def test_a_scheduled_run_waits_for_the_period(app):
    db, settings = app.state.db, app.state.settings
    assert run_job(db, settings, "expire-holds", only_if_due=True) is not None
    assert run_job(db, settings, "expire-holds", only_if_due=True) is None
    clock.advance(JOBS["expire-holds"].period)
    assert run_job(db, settings, "expire-holds", only_if_due=True) is not None


def test_jobs_run_from_the_command_line(database_url, monkeypatch, app):
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    result = CliRunner().invoke(cli, ["jobs", "run", "expire-holds"])
    assert result.exit_code == 0, result.output
    assert "expire-holds: settled 0 lapsed holds" in result.output
    unknown = CliRunner().invoke(cli, ["jobs", "run", "no-such-job"])
    assert unknown.exit_code == 2
