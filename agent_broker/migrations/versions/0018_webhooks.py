"""Agent webhooks: each account's endpoint and the outbox of its events.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_endpoints",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("secret", sa.String(length=100), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_endpoints_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_webhook_endpoints")),
    )
    op.create_table(
        "webhook_events",
        sa.Column("sequence", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("subject", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=False),
        sa.Column("delivered_at", UTCDateTime(), nullable=True),
        sa.Column("failed_at", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_webhook_events_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("sequence", name=op.f("pk_webhook_events")),
        sa.UniqueConstraint("id", name=op.f("uq_webhook_events_id")),
    )
    with op.batch_alter_table("webhook_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_events_subject", ["account_id", "subject", "sequence"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_events_due", ["delivered_at", "failed_at", "next_attempt_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("webhook_events")
    op.drop_table("webhook_endpoints")
