"""What the operator commands share: the settings, read with one line per rejected value
(and the log level they set applied), and the database, opened only once it carries this
release's schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError

from agent_broker.config import Settings

if TYPE_CHECKING:
    from agent_broker.db.engine import Database
    from agent_broker.tokens.keys import Signer

NOT_MIGRATED = "database is not migrated; run `agent-broker db upgrade`"


def load_settings() -> Settings:
    """The settings; the command's log lines (JSON on standard error, configured before
    any command runs) are filtered at their BROKER_LOG_LEVEL from here on."""
    from agent_broker.logging import configure as configure_logging

    try:
        settings = Settings()
    except ValidationError as exc:
        # One line per rejected setting, never its value: a BROKER_* value may be a secret.
        for line in _setting_errors(exc):
            typer.echo(f"configuration error: {line}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    configure_logging(settings.log_level)
    return settings


@contextmanager
def signing_key_errors() -> Iterator[None]:
    """A development key file that holds no key: one line and exit 1, not a traceback
    (the file is left for the operator to look at)."""
    from agent_broker.tokens.keys import SigningKeyError

    try:
        yield
    except SigningKeyError as exc:
        typer.echo(f"signing key error: {exc}", err=True)
        raise typer.Exit(1) from None


def load_signer(settings: Settings) -> Signer:
    """The signing key the settings call for (the development key file is made if none)."""
    from agent_broker.tokens.keys import signer_for

    with signing_key_errors():
        return signer_for(settings)


def _setting_errors(exc: ValidationError) -> list[str]:
    prefix = Settings.model_config.get("env_prefix", "")
    lines = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        message = error["msg"].removeprefix("Value error, ")
        field = "_".join(str(part) for part in error["loc"])
        lines.append(f"{prefix}{field.upper()}: {message}" if field else message)
    return lines


def open_database(settings: Settings) -> Database:
    """The database, once it is known to carry this release's schema; otherwise one line
    saying so and exit 1, rather than a traceback from the first missing table. The
    commands' work is the operator's, run with the jobs' longer statement limit."""
    from sqlalchemy.exc import OperationalError

    from agent_broker.db.engine import create_database
    from agent_broker.migrations.migrate import is_migrated

    db = create_database(settings, work="jobs")
    try:
        migrated = is_migrated(db)
    except OperationalError as exc:
        db.dispose()
        # The driver's own first line (refused, unknown host, bad file); never the URL.
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        typer.echo(f"cannot reach the database: {reason}", err=True)
        raise typer.Exit(1) from None
    except BaseException:
        db.dispose()
        raise
    if not migrated:
        db.dispose()
        typer.echo(NOT_MIGRATED, err=True)
        raise typer.Exit(1)
    return db
