"""ledger chain

Revision ID: 0007
Revises: 0006

The hash chain over the journal: one seal per sealed entry, the checkpoints sealer runs
leave, and the stored verdict GET /v1/ledger/verify serves. Seals and checkpoints are
append-only like the journal itself (ledger_refuse_change() comes from 0001 on PostgreSQL).
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

APPEND_ONLY_TABLES = ("ledger_seals", "ledger_checkpoints")


def upgrade() -> None:
    op.create_table(
        "ledger_checkpoints",
        sa.Column("sequence", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("sealed_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sequence", name=op.f("pk_ledger_checkpoints")),
    )
    op.create_table(
        "ledger_seals",
        sa.Column("sequence", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("prev_sequence", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.CheckConstraint(
            "prev_sequence >= 0 AND prev_sequence < sequence",
            name=op.f("ck_ledger_seals_link_backwards"),
        ),
        sa.PrimaryKeyConstraint("sequence", name=op.f("pk_ledger_seals")),
        sa.UniqueConstraint("prev_sequence", name=op.f("uq_ledger_seals_prev_sequence")),
    )
    op.create_table(
        "ledger_verdicts",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_ledger_verdicts_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_verdicts")),
    )
    _make_append_only()


def _make_append_only() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in APPEND_ONLY_TABLES:
        if sqlite:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
                )
        else:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
            )


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in APPEND_ONLY_TABLES:
        if sqlite:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
    op.drop_table("ledger_verdicts")
    op.drop_table("ledger_seals")
    op.drop_table("ledger_checkpoints")
