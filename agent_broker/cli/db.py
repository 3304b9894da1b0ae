"""`agent-broker db`: database maintenance."""

from __future__ import annotations

import typer

from agent_broker.cli.common import load_settings

db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply migrations."""
    from agent_broker.migrations.migrate import upgrade

    upgrade(load_settings().database_url, revision)
    typer.echo("database is up to date")
