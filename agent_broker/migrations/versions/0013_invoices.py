"""Invoices and the inbox of processor callbacks.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "invoices",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("processor", sa.String(length=20), nullable=False),
        sa.Column("chain", sa.String(length=20), nullable=True),
        sa.Column("pack_count", sa.Integer(), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("processor_id", sa.String(length=200), nullable=False),
        sa.Column("payment_url", sa.String(length=2048), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("paid_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "processor IN ('processor_a', 'processor_b', 'stub')",
            name=op.f("ck_invoices_processor"),
        ),
        sa.CheckConstraint("status IN ('open', 'paid')", name=op.f("ck_invoices_status")),
        sa.CheckConstraint(
            "pack_count > 0 AND amount_micro > 0", name=op.f("ck_invoices_positive")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_invoices_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invoices")),
        sa.UniqueConstraint("processor", "processor_id", name="uq_invoices_processor_id"),
    )
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_invoices_account_id"), ["account_id"], unique=False)
    op.create_table(
        "processor_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("processor", sa.String(length=20), nullable=False),
        sa.Column("event_key", sa.String(length=300), nullable=False),
        sa.Column("invoice_id", sa.String(length=36), nullable=False),
        sa.Column("credited_micro", sa.BigInteger(), nullable=False),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "credited_micro >= 0", name=op.f("ck_processor_events_credited_non_negative")
        ),
        sa.ForeignKeyConstraint(
            ["invoice_id"], ["invoices.id"], name=op.f("fk_processor_events_invoice_id_invoices")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_processor_events")),
        sa.UniqueConstraint("processor", "event_key", name="uq_processor_events_event"),
    )
    with op.batch_alter_table("processor_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_processor_events_invoice_id"), ["invoice_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("processor_events")
    op.drop_table("invoices")
