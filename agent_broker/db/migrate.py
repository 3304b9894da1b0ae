"""Alembic, driven from code so no alembic.ini is needed at run time."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


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
    db = create_database(settings)
    try:
        with db.engine.begin() as conn:
            cfg = alembic_config(database_url)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        db.dispose()
