"""health samples

Revision ID: 0008
Revises: 0007

The service's own health samples (the `health-sample` job), from which /status.json is
derived.
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "health_samples",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("taken_at", UTCDateTime(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("detail", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health_samples")),
    )
    op.create_index(
        op.f("ix_health_samples_taken_at"), "health_samples", ["taken_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_health_samples_taken_at"), table_name="health_samples")
    op.drop_table("health_samples")
