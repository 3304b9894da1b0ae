"""Alembic, driven from code so no alembic.ini is needed at run time."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config

if TYPE_CHECKING:
    from agent_broker.db.engine import Database

MIGRATIONS = Path(__file__).parent  # env.py, script.py.mako and versions/ sit beside this file
_MIGRATION_LOGGER = "alembic.runtime.migration"


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    # Create the SQLite directory before Alembic connects.
    from agent_broker.config import Settings
    from agent_broker.db.engine import create_database

    settings = Settings(database_url=database_url)
    # A migration may rewrite a large table: the server's own limits, not the service's.
    db = create_database(settings, work="migrations")
    try:
        with db.engine.begin() as conn:
            cfg = alembic_config(database_url)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        db.dispose()


def is_migrated(db: Database) -> bool:
    """Whether the database carries exactly this release's head revisions. False for an
    empty database, one migrated only part of the way, or one a newer release migrated."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    heads = set(ScriptDirectory.from_config(cfg).get_heads())
    # A reader session: on SQLite it begins DEFERRED and takes no write lock.
    with db.reader() as session, _quiet(_MIGRATION_LOGGER):
        current = set(MigrationContext.configure(session.connection()).get_current_heads())
    return current == heads


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Warnings only from the logger `name` for the block: every operator command checks
    the schema, and Alembic's lines about the dialect in use ("Context impl SQLiteImpl.")
    would otherwise open each command's log."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)
