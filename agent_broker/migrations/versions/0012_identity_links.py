"""Identity links: an identity provider's (issuer, subject) reaching an account.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identity_links",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("linked_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_identity_links_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_links")),
        sa.UniqueConstraint("issuer", "subject", name="uq_identity_links_identity"),
    )
    with op.batch_alter_table("identity_links", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_identity_links_account_id"), ["account_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("identity_links")
