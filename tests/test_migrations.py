from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from agent_broker.migrations.models import Base

# Feed search exists on one database each and stays out of the models (migration 0017).
SEARCH_ONLY = {"listings_fts", "search", "ix_listings_search"}


def _modelled(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
    return not (reflected and (name in SEARCH_ONLY or (name or "").startswith("listings_fts_")))


def test_migrations_build_exactly_the_models_schema(database_url):
    engine = create_engine(database_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": _modelled})
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []
