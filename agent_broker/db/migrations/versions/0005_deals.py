"""deals

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deals",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("thread_id", sa.String(length=36), nullable=False),
        sa.Column("listing_id", sa.String(length=36), nullable=False),
        sa.Column("poster_id", sa.String(length=36), nullable=False),
        sa.Column("negotiator_id", sa.String(length=36), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("reveal_at", UTCDateTime(), nullable=False),
        sa.Column("purge_at", UTCDateTime(), nullable=False),
        sa.Column("poster_route_hash", sa.String(length=32), nullable=True),
        sa.Column("poster_route", sa.String(length=2048), nullable=True),
        sa.Column("poster_binding", sa.String(length=300), nullable=True),
        sa.Column("poster_card_url", sa.String(length=2048), nullable=True),
        sa.Column("poster_contact_name", sa.String(length=200), nullable=True),
        sa.Column("poster_contact_email", sa.String(length=254), nullable=True),
        sa.Column("poster_contact_url", sa.String(length=2048), nullable=True),
        sa.Column("negotiator_route_hash", sa.String(length=32), nullable=True),
        sa.Column("negotiator_route", sa.String(length=2048), nullable=True),
        sa.Column("negotiator_binding", sa.String(length=300), nullable=True),
        sa.Column("negotiator_card_url", sa.String(length=2048), nullable=True),
        sa.Column("negotiator_contact_name", sa.String(length=200), nullable=True),
        sa.Column("negotiator_contact_email", sa.String(length=254), nullable=True),
        sa.Column("negotiator_contact_url", sa.String(length=2048), nullable=True),
        sa.CheckConstraint("status IN ('active', 'purged')", name=op.f("ck_deals_status")),
        sa.ForeignKeyConstraint(
            ["listing_id"], ["listings.id"], name=op.f("fk_deals_listing_id_listings")
        ),
        sa.ForeignKeyConstraint(
            ["negotiator_id"], ["accounts.id"], name=op.f("fk_deals_negotiator_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["poster_id"], ["accounts.id"], name=op.f("fk_deals_poster_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"], ["threads.id"], name=op.f("fk_deals_thread_id_threads")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deals")),
        sa.UniqueConstraint("thread_id", name=op.f("uq_deals_thread_id")),
    )
    with op.batch_alter_table("deals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deals_negotiator_id"), ["negotiator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_deals_poster_id"), ["poster_id"], unique=False)
        batch_op.create_index("ix_deals_purge", ["status", "purge_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("deals", schema=None) as batch_op:
        batch_op.drop_index("ix_deals_purge")
        batch_op.drop_index(batch_op.f("ix_deals_poster_id"))
        batch_op.drop_index(batch_op.f("ix_deals_negotiator_id"))

    op.drop_table("deals")
