"""The events log: every account's events, kept for BROKER_EVENT_RETENTION_HOURS, read
through GET /v1/events and its stream whether or not the account has a webhook.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "account_events",
        sa.Column("sequence", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("txid", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_account_events_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("sequence", name=op.f("pk_account_events")),
        sa.UniqueConstraint("id", name=op.f("uq_account_events_id")),
    )
    with op.batch_alter_table("account_events", schema=None) as batch_op:
        batch_op.create_index("ix_account_events_feed", ["account_id", "sequence"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_account_events_created_at"), ["created_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("account_events")
