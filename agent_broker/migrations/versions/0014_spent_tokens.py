"""Spent agent OAuth tokens: (issuer, jti) of tokens used for a once-only operation.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "spent_tokens",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("jti", sa.String(length=200), nullable=False),
        sa.Column("spent_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spent_tokens")),
        sa.UniqueConstraint("issuer", "jti", name="uq_spent_tokens_token"),
    )
    with op.batch_alter_table("spent_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_spent_tokens_expires_at"), ["expires_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("spent_tokens")
