"""Domain proof grants: one per account and per domain, ever, and the daily cap's counter.
A claim no longer carries its own grant flag (the grant row is the record).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "domain_grants",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("claimed_at", UTCDateTime(), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("paid_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint("status IN ('pending', 'paid')", name=op.f("ck_domain_grants_status")),
        sa.CheckConstraint(
            "amount_micro >= 0", name=op.f("ck_domain_grants_amount_micro_non_negative")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domain_grants")),
        sa.UniqueConstraint("account_id", name="uq_domain_grants_account_id"),
        sa.UniqueConstraint("domain", name="uq_domain_grants_domain"),
    )
    op.create_table(
        "domain_grant_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("paid", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", name=op.f("pk_domain_grant_days")),
    )
    with op.batch_alter_table("domain_claims", schema=None) as batch_op:
        batch_op.drop_column("grant_paid")


def downgrade() -> None:
    with op.batch_alter_table("domain_claims", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("grant_paid", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.execute(
        "UPDATE domain_claims SET grant_paid = true WHERE EXISTS (SELECT 1 FROM domain_grants g"
        " WHERE g.account_id = domain_claims.account_id AND g.domain = domain_claims.domain"
        " AND g.status = 'paid')"
    )
    op.drop_table("domain_grant_days")
    op.drop_table("domain_grants")
