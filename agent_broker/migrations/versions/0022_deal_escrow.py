"""Deal escrow: escrow listings, the thread's price and its hold, the escrows, and the
seller's escrow counters on the reputation record.

Columns are added in place (no table rebuild on SQLite, which would drop the listings'
search triggers of migration 0017).

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_LISTING_COLUMNS = (
    sa.Column("settlement", sa.String(length=6), server_default="direct", nullable=False),
    sa.Column("delivery_hours", sa.Integer(), nullable=True),
    sa.Column("acceptance_hours", sa.Integer(), nullable=True),
    sa.Column("evaluator_id", sa.String(length=36), nullable=True),
    sa.Column("evaluator_handle", sa.String(length=12), nullable=True),
)
_THREAD_COLUMNS = (
    sa.Column("price_micro", sa.BigInteger(), nullable=True),
    sa.Column("price_hold_id", sa.String(length=36), nullable=True),
)
_DEAL_COLUMNS = (
    sa.Column("settlement", sa.String(length=6), server_default="direct", nullable=False),
)
_STATS_COLUMNS = tuple(
    sa.Column(name, sa.Integer(), server_default="0", nullable=False)
    for name in ("escrow_released", "escrow_refunded", "escrow_split", "escrow_on_time")
)


# The ledger's two new system books (agent_broker.ledger.books).
NEW_BOOKS = ("system:escrow", "system:payouts")


def _seed_books() -> None:
    books = sa.table(
        "ledger_accounts",
        sa.column("code", sa.String),
        sa.column("kind", sa.String),
        sa.column("total_micro", sa.BigInteger),
        sa.column("held_micro", sa.BigInteger),
        sa.column("funded", sa.Boolean),
        sa.column("created_at", UTCDateTime()),
    )
    epoch = datetime(2026, 1, 1, tzinfo=UTC)
    op.bulk_insert(
        books,
        [
            {
                "code": code,
                "kind": "system",
                "total_micro": 0,
                "held_micro": 0,
                "funded": False,
                "created_at": epoch,
            }
            for code in NEW_BOOKS
        ],
    )


def upgrade() -> None:
    _seed_books()
    when = UTCDateTime
    op.create_table(
        "deal_escrows",
        sa.Column("deal_id", sa.String(length=36), nullable=False),
        sa.Column("buyer_id", sa.String(length=36), nullable=False),
        sa.Column("seller_id", sa.String(length=36), nullable=False),
        sa.Column("evaluator_id", sa.String(length=36), nullable=True),
        sa.Column("evaluator_handle", sa.String(length=12), nullable=True),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("counts_for_reputation", sa.Boolean(), nullable=False),
        sa.Column("fee_bps", sa.Integer(), nullable=False),
        sa.Column("acceptance_hours", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_at", when(), nullable=False),
        sa.Column("deliver_by", when(), nullable=False),
        sa.Column("delivered_at", when(), nullable=True),
        sa.Column("accept_by", when(), nullable=True),
        sa.Column("delivery_note", sa.String(length=2000), nullable=True),
        sa.Column("evidence_sha256", sa.String(length=64), nullable=True),
        sa.Column("rejected_at", when(), nullable=True),
        sa.Column("rejection_reason", sa.String(length=2000), nullable=True),
        sa.Column("ruling_outcome", sa.String(length=8), nullable=True),
        sa.Column("ruling_seller_share_bps", sa.Integer(), nullable=True),
        sa.Column("ruling_reason", sa.String(length=2000), nullable=True),
        sa.Column("ruling_token", sa.String(length=2000), nullable=True),
        sa.Column("ruled_at", when(), nullable=True),
        sa.Column("released_micro", sa.BigInteger(), nullable=True),
        sa.Column("refunded_micro", sa.BigInteger(), nullable=True),
        sa.Column("fee_micro", sa.BigInteger(), nullable=True),
        sa.Column("settled_at", when(), nullable=True),
        sa.Column("settled_by", sa.String(length=10), nullable=True),
        sa.CheckConstraint(
            "status IN ('held', 'delivered', 'rejected', 'released', 'refunded', 'split')",
            name=op.f("ck_deal_escrows_status"),
        ),
        sa.CheckConstraint("amount_micro >= 0", name=op.f("ck_deal_escrows_amount_non_negative")),
        sa.ForeignKeyConstraint(
            ["buyer_id"], ["accounts.id"], name=op.f("fk_deal_escrows_buyer_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["deal_id"], ["deals.id"], name=op.f("fk_deal_escrows_deal_id_deals")
        ),
        sa.ForeignKeyConstraint(
            ["evaluator_id"], ["accounts.id"], name=op.f("fk_deal_escrows_evaluator_id_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["seller_id"], ["accounts.id"], name=op.f("fk_deal_escrows_seller_id_accounts")
        ),
        sa.PrimaryKeyConstraint("deal_id", name=op.f("pk_deal_escrows")),
    )
    op.create_index("ix_deal_escrows_buyer_id", "deal_escrows", ["buyer_id"])
    op.create_index("ix_deal_escrows_seller_id", "deal_escrows", ["seller_id"])
    op.create_index("ix_deal_escrows_evaluator_id", "deal_escrows", ["evaluator_id"])
    op.create_index("ix_deal_escrows_open", "deal_escrows", ["status", "deliver_by"])
    for column in _LISTING_COLUMNS:
        op.add_column("listings", column)
    for column in _THREAD_COLUMNS:
        op.add_column("threads", column)
    # A thread's price is its listing's until an offer names one.
    op.execute(
        "UPDATE threads SET price_micro ="
        " (SELECT listings.price_micro FROM listings WHERE listings.id = threads.listing_id)"
    )
    for column in _STATS_COLUMNS:
        op.add_column("reputation_stats", column)
    for column in _DEAL_COLUMNS:
        op.add_column("deals", column)


def downgrade() -> None:
    for table, columns in (
        ("deals", _DEAL_COLUMNS),
        ("reputation_stats", _STATS_COLUMNS),
        ("threads", _THREAD_COLUMNS),
        ("listings", _LISTING_COLUMNS),
    ):
        for column in columns:
            op.drop_column(table, column.name)
    op.drop_table("deal_escrows")
    books = sa.table("ledger_accounts", sa.column("code", sa.String))
    op.execute(books.delete().where(books.c.code.in_(NEW_BOOKS)))
