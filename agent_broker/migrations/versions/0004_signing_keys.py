"""signing keys

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signing_keys",
        sa.Column("kid", sa.String(length=16), nullable=False),
        sa.Column("public_key_hex", sa.String(length=64), nullable=False),
        sa.Column("activated_at", UTCDateTime(), nullable=False),
        sa.Column("retired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kid", name=op.f("pk_signing_keys")),
    )


def downgrade() -> None:
    op.drop_table("signing_keys")
