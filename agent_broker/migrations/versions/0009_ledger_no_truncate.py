"""ledger no truncate

Revision ID: 0009
Revises: 0008

PostgreSQL: the journal and the chain's seals and checkpoints refuse TRUNCATE as well.
Their row triggers (0001, 0007) refuse UPDATE and DELETE, but TRUNCATE fires no row
trigger, so it would empty them silently; a statement-level BEFORE TRUNCATE trigger
refuses it, including a TRUNCATE ... CASCADE reaching them from another table. SQLite has
no TRUNCATE (DELETE without WHERE is already refused by the row triggers).
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

NO_TRUNCATE_TABLES = ("ledger_entries", "ledger_postings", "ledger_seals", "ledger_checkpoints")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table in NO_TRUNCATE_TABLES:
        # ledger_refuse_change() (0001) raises whatever fired it, statement triggers too.
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table in NO_TRUNCATE_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
