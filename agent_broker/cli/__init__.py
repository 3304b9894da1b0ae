"""The agent-broker command: one module per command group (serve.py: `serve` and `mcp`;
db, admin, jobs, keys, ledger; verify_proof.py, verify_ruling.py; `agent` is the
standalone client's `agent-broker-agent`, through agent_broker.client.cli), put together
here in the order `--help` lists them."""

from __future__ import annotations

import typer

from agent_broker.cli import serve, verify_proof, verify_ruling
from agent_broker.cli.admin import admin_app
from agent_broker.cli.db import db_app
from agent_broker.cli.jobs import jobs_app
from agent_broker.cli.keys import keys_app
from agent_broker.cli.ledger import ledger_app
from agent_broker.cli.serve import event_loop_for
from agent_broker.client import cli as agent_cli

__all__ = ["app", "event_loop_for", "main"]

app = typer.Typer(
    help="agent-broker: a marketplace broker for automated agents.", no_args_is_help=True
)


@app.callback()
def _configure_logging(ctx: typer.Context) -> None:
    # Before any command runs, so nothing it logs reaches standard output in structlog's
    # console format: JSON lines on standard error, at INFO until load_settings applies
    # BROKER_LOG_LEVEL (some commands never load the settings). `agent` is left alone: it
    # is `agent-broker-agent`, with the same output.
    if ctx.invoked_subcommand != "agent":
        from agent_broker.logging import configure

        configure()


app.command()(serve.serve)
app.command("mcp")(serve.mcp)
app.command("verify-proof")(verify_proof.verify_proof)
app.command("verify-ruling")(verify_ruling.verify_ruling)
app.add_typer(db_app, name="db")
app.add_typer(admin_app, name="admin")
app.add_typer(jobs_app, name="jobs")
app.add_typer(keys_app, name="keys")
app.add_typer(ledger_app, name="ledger")
app.command("agent", context_settings=agent_cli.CONTEXT, add_help_option=False)(agent_cli.agent)


def main() -> None:
    app(prog_name="agent-broker")
