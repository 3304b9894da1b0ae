"""Feed search and price order: the (status, price_micro, created_at, id) index, and full
text over title and body, as each database does it: an FTS5 table kept by triggers on
SQLite, a generated tsvector column with a GIN index on PostgreSQL. Listings never change
their title or body, but the triggers keep the index right if one ever did.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_SQLITE_UP = (
    "CREATE VIRTUAL TABLE listings_fts USING fts5(title, body, content='listings', "
    "content_rowid='rowid')",
    "INSERT INTO listings_fts(rowid, title, body) SELECT rowid, title, body FROM listings",
    "CREATE TRIGGER listings_fts_insert AFTER INSERT ON listings BEGIN "
    "INSERT INTO listings_fts(rowid, title, body) VALUES (new.rowid, new.title, new.body); END",
    "CREATE TRIGGER listings_fts_delete AFTER DELETE ON listings BEGIN "
    "INSERT INTO listings_fts(listings_fts, rowid, title, body) "
    "VALUES ('delete', old.rowid, old.title, old.body); END",
    "CREATE TRIGGER listings_fts_update AFTER UPDATE OF title, body ON listings BEGIN "
    "INSERT INTO listings_fts(listings_fts, rowid, title, body) "
    "VALUES ('delete', old.rowid, old.title, old.body); "
    "INSERT INTO listings_fts(rowid, title, body) VALUES (new.rowid, new.title, new.body); END",
)
_SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS listings_fts_update",
    "DROP TRIGGER IF EXISTS listings_fts_delete",
    "DROP TRIGGER IF EXISTS listings_fts_insert",
    "DROP TABLE IF EXISTS listings_fts",
)
_POSTGRES_UP = (
    "ALTER TABLE listings ADD COLUMN search tsvector GENERATED ALWAYS AS "
    "(to_tsvector('simple', title || ' ' || body)) STORED",
    "CREATE INDEX ix_listings_search ON listings USING gin (search)",
)
_POSTGRES_DOWN = (
    "DROP INDEX IF EXISTS ix_listings_search",
    "ALTER TABLE listings DROP COLUMN IF EXISTS search",
)


def upgrade() -> None:
    op.create_index(
        "ix_listings_feed_price", "listings", ["status", "price_micro", "created_at", "id"]
    )
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_UP if sqlite else _POSTGRES_UP:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _SQLITE_DOWN if sqlite else _POSTGRES_DOWN:
        op.execute(statement)
    op.drop_index("ix_listings_feed_price", table_name="listings")
