"""listings

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "listings",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("poster_id", sa.String(length=36), nullable=False),
        sa.Column("poster_handle", sa.String(length=12), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("listing_type", sa.String(length=4), nullable=False),
        sa.Column("category", sa.String(length=32), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("price_micro", sa.BigInteger(), nullable=False),
        sa.Column("delivery_deadline_days", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "listing_type IN ('buy', 'sell')", name=op.f("ck_listings_listing_type")
        ),
        sa.CheckConstraint(
            "status IN ('live', 'matched', 'expired', 'cancelled')", name=op.f("ck_listings_status")
        ),
        sa.CheckConstraint("price_micro >= 0", name=op.f("ck_listings_price_non_negative")),
        sa.ForeignKeyConstraint(
            ["poster_id"], ["accounts.id"], name=op.f("fk_listings_poster_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_listings")),
    )
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.create_index("ix_listings_feed", ["status", "created_at", "id"], unique=False)
        batch_op.create_index(
            "ix_listings_feed_category", ["category", "status", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_listings_feed_type", ["listing_type", "status", "created_at", "id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_listings_poster_id"), ["poster_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("listings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_listings_poster_id"))
        batch_op.drop_index("ix_listings_feed_type")
        batch_op.drop_index("ix_listings_feed_category")
        batch_op.drop_index("ix_listings_feed")

    op.drop_table("listings")
