"""Background jobs run on demand, as the scheduler would run them."""

from __future__ import annotations

from fastapi import FastAPI

from agent_broker.jobs.runner import run_job


def run(app: FastAPI, name: str) -> str:
    """Run job `name` once now (it must run, not find its lease taken): its outcome."""
    outcome = run_job(app.state.context, name)
    assert outcome is not None
    return outcome
