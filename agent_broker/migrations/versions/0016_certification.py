"""Certification: each account's record and the probes of its deal route.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "certifications",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("renew", sa.Boolean(), nullable=False),
        sa.Column("period_start", UTCDateTime(), nullable=True),
        sa.Column("period_end", UTCDateTime(), nullable=True),
        sa.Column("window_route", sa.String(length=2048), nullable=True),
        sa.Column("window_started_at", UTCDateTime(), nullable=True),
        sa.Column("public_certified", sa.Boolean(), nullable=False),
        sa.Column("checked_on", sa.Date(), nullable=True),
        sa.Column("last_test_at", UTCDateTime(), nullable=True),
        sa.Column("last_test_route", sa.String(length=2048), nullable=True),
        sa.Column("last_test_passed", sa.Boolean(), nullable=True),
        sa.Column("last_test_status_code", sa.Integer(), nullable=True),
        sa.Column("last_test_detail", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_certifications_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("account_id", name=op.f("pk_certifications")),
    )
    op.create_table(
        "certification_checks",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("route", sa.String(length=2048), nullable=False),
        sa.Column("checked_at", UTCDateTime(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("detail", sa.String(length=300), nullable=False),
        sa.CheckConstraint(
            "kind IN ('test', 'scheduled')", name=op.f("ck_certification_checks_kind")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["accounts.id"],
            name=op.f("fk_certification_checks_account_id_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_certification_checks")),
    )
    with op.batch_alter_table("certification_checks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_certification_checks_account_id"), ["account_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_certification_checks_checked_at"), ["checked_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("certification_checks")
    op.drop_table("certifications")
