"""threads

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("listing_id", sa.String(length=36), nullable=False),
        sa.Column("poster_id", sa.String(length=36), nullable=False),
        sa.Column("opener_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("turn", sa.String(length=10), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("hold_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('open', 'rejected', 'finalized', 'closed')", name=op.f("ck_threads_status")
        ),
        sa.CheckConstraint("turn IN ('poster', 'negotiator')", name=op.f("ck_threads_turn")),
        sa.ForeignKeyConstraint(
            ["listing_id"], ["listings.id"], name=op.f("fk_threads_listing_id_listings")
        ),
        sa.ForeignKeyConstraint(
            ["opener_id"], ["accounts.id"], name=op.f("fk_threads_opener_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["poster_id"], ["accounts.id"], name=op.f("fk_threads_poster_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_threads")),
    )
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.create_index("ix_threads_listing", ["listing_id", "created_at"], unique=False)
        batch_op.create_index("ix_threads_opener", ["opener_id", "created_at"], unique=False)
        batch_op.create_index("ix_threads_poster", ["poster_id", "created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("threads", schema=None) as batch_op:
        batch_op.drop_index("ix_threads_poster")
        batch_op.drop_index("ix_threads_opener")
        batch_op.drop_index("ix_threads_listing")

    op.drop_table("threads")
