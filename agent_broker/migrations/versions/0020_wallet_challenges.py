"""Wallet key recovery: the Sign-In with Ethereum messages issued, each nonce good for one
recovery until it expires.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wallet_challenges",
        sa.Column("nonce", sa.String(length=32), nullable=False),
        sa.Column("message_sha256", sa.String(length=64), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("used_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("nonce", name=op.f("pk_wallet_challenges")),
    )
    with op.batch_alter_table("wallet_challenges", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_wallet_challenges_expires_at"), ["expires_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("wallet_challenges")
