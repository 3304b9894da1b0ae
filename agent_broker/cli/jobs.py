"""`agent-broker jobs`: the scheduled jobs, listed or run once."""

from __future__ import annotations

import typer

from agent_broker.cli.common import load_settings, open_database

jobs_app = typer.Typer(help="Scheduled jobs.", no_args_is_help=True)


@jobs_app.command("list")
def jobs_list() -> None:
    """List jobs: name, then period in seconds, then what it does."""
    from agent_broker.jobs.registry import JOBS

    for job in JOBS.values():
        typer.echo(f"{job.name}\t{int(job.period.total_seconds())}s\t{job.description}")


@jobs_app.command("run")
def jobs_run(name: str) -> None:
    """Run one job once (cron-friendly)."""
    from agent_broker.app import build_context
    from agent_broker.jobs.registry import JOBS
    from agent_broker.jobs.runner import run_job

    if name not in JOBS:
        typer.echo(f"unknown job {name!r}; known: {', '.join(JOBS)}", err=True)
        raise typer.Exit(2)
    settings = load_settings()
    db = open_database(settings)
    try:
        outcome = run_job(build_context(settings, db), name)
    finally:
        db.dispose()
    if outcome is None:
        typer.echo(f"{name}: another runner holds the lease; nothing done", err=True)
        raise typer.Exit(3)
    typer.echo(f"{name}: {outcome}")
