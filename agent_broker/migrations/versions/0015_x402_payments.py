"""x402 payments: each authorization claimed once by its nonce.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "x402_payments",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("nonce", sa.String(length=66), nullable=False),
        sa.Column("payer", sa.String(length=42), nullable=False),
        sa.Column("network", sa.String(length=30), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("x402_version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=True),
        sa.Column("transaction", sa.String(length=100), nullable=True),
        sa.Column("claimed_at", UTCDateTime(), nullable=False),
        sa.Column("settled_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'settled')", name=op.f("ck_x402_payments_status")
        ),
        sa.CheckConstraint("amount_micro > 0", name=op.f("ck_x402_payments_positive")),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_x402_payments_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_x402_payments")),
        sa.UniqueConstraint("nonce", name="uq_x402_payments_nonce"),
    )
    with op.batch_alter_table("x402_payments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_x402_payments_payer"), ["payer"], unique=False)


def downgrade() -> None:
    op.drop_table("x402_payments")
