"""x402 payments: a claim whose settlement did not match its authorization is kept as
`mismatch`, and every kept claim says why in `note`.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_OLD = "status IN ('pending', 'settled')"
_NEW = "status IN ('pending', 'settled', 'mismatch')"


def upgrade() -> None:
    with op.batch_alter_table("x402_payments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.String(length=300), nullable=True))
        batch_op.drop_constraint(op.f("ck_x402_payments_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_x402_payments_status"), _NEW)


def downgrade() -> None:
    with op.batch_alter_table("x402_payments", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_x402_payments_status"), type_="check")
        batch_op.create_check_constraint(op.f("ck_x402_payments_status"), _OLD)
        batch_op.drop_column("note")
