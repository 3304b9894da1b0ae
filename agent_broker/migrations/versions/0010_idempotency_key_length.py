"""Idempotency-Key: any key of 1 to 255 printable ASCII characters, not only UUIDs.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.alter_column(
            "key", existing_type=sa.String(length=36), type_=sa.String(length=255)
        )


def downgrade() -> None:
    op.execute("DELETE FROM idempotency_keys WHERE length(key) > 36")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.alter_column(
            "key", existing_type=sa.String(length=255), type_=sa.String(length=36)
        )
