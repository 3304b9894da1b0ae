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
        sa.Column("poster_role", sa.String(length=6), nullable=False),
        sa.Column("counts_for_reputation", sa.Boolean(), nullable=False),
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

    op.create_table(
        "deal_disputes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("deal_id", sa.String(length=36), nullable=False),
        sa.Column("filer_id", sa.String(length=36), nullable=False),
        sa.Column("against_id", sa.String(length=36), nullable=False),
        sa.Column("counts_for_reputation", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["against_id"], ["accounts.id"], name=op.f("fk_deal_disputes_against_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_disputes_deal_id_deals")
        ),
        sa.ForeignKeyConstraint(
            ["filer_id"], ["accounts.id"], name=op.f("fk_deal_disputes_filer_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_disputes")),
        sa.UniqueConstraint("deal_id", "filer_id", name="uq_deal_disputes_deal_filer"),
    )
    with op.batch_alter_table("deal_disputes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_deal_disputes_against_id"), ["against_id"], unique=False
        )

    op.create_table(
        "deal_ratings",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("deal_id", sa.String(length=36), nullable=False),
        sa.Column("rater_id", sa.String(length=36), nullable=False),
        sa.Column("ratee_id", sa.String(length=36), nullable=False),
        sa.Column("ratee_role", sa.String(length=6), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("score BETWEEN 1 AND 5", name=op.f("ck_deal_ratings_score")),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_ratings_deal_id_deals")
        ),
        sa.ForeignKeyConstraint(
            ["ratee_id"], ["accounts.id"], name=op.f("fk_deal_ratings_ratee_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["rater_id"], ["accounts.id"], name=op.f("fk_deal_ratings_rater_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deal_ratings")),
        sa.UniqueConstraint("deal_id", "rater_id", name="uq_deal_ratings_deal_rater"),
    )
    with op.batch_alter_table("deal_ratings", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_deal_ratings_ratee_id"), ["ratee_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("deal_ratings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deal_ratings_ratee_id"))

    op.drop_table("deal_ratings")
    with op.batch_alter_table("deal_disputes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deal_disputes_against_id"))

    op.drop_table("deal_disputes")
    with op.batch_alter_table("deals", schema=None) as batch_op:
        batch_op.drop_index("ix_deals_purge")
        batch_op.drop_index(batch_op.f("ix_deals_poster_id"))
        batch_op.drop_index(batch_op.f("ix_deals_negotiator_id"))

    op.drop_table("deals")
