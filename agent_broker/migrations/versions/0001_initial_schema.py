"""initial schema

Revision ID: 0001
Revises:
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from agent_broker.db.base import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("handle", sa.String(length=12), nullable=False),
        sa.Column("api_key_hash", sa.String(length=64), nullable=False),
        sa.Column("key_preview", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("contact_name", sa.String(length=200), nullable=True),
        sa.Column("contact_email", sa.String(length=254), nullable=True),
        sa.Column("contact_url", sa.String(length=2048), nullable=True),
        sa.Column("deal_route", sa.String(length=2048), nullable=True),
        sa.Column("route_protocol_binding", sa.String(length=300), nullable=True),
        sa.Column("agent_card_url", sa.String(length=2048), nullable=True),
        sa.CheckConstraint("status IN ('active', 'inactive')", name=op.f("ck_accounts_status")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_accounts")),
        sa.UniqueConstraint("api_key_hash", name=op.f("uq_accounts_api_key_hash")),
        sa.UniqueConstraint("handle", name=op.f("uq_accounts_handle")),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=64), nullable=False),
        sa.Column("route", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=36), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=False),
        sa.Column("response_body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_idempotency_keys")),
        sa.UniqueConstraint("scope", "route", "key", name="uq_idempotency_keys_scope"),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_idempotency_keys_created_at"), ["created_at"], unique=False
        )

    op.create_table(
        "job_leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("last_started_at", UTCDateTime(), nullable=True),
        sa.Column("last_finished_at", UTCDateTime(), nullable=True),
        sa.Column("last_outcome", sa.String(length=500), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_job_leases")),
    )
    op.create_table(
        "ledger_accounts",
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("owner_id", sa.String(length=36), nullable=True),
        sa.Column("total_micro", sa.BigInteger(), nullable=False),
        sa.Column("held_micro", sa.BigInteger(), nullable=False),
        sa.Column("funded", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "kind != 'wallet' OR (total_micro >= 0 AND held_micro >= 0 AND held_micro <= total_micro)",
            name=op.f("ck_ledger_accounts_wallet_non_negative"),
        ),
        sa.CheckConstraint("kind IN ('wallet', 'system')", name=op.f("ck_ledger_accounts_kind")),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_ledger_accounts")),
        sa.UniqueConstraint("owner_id", name=op.f("uq_ledger_accounts_owner_id")),
    )
    op.create_table(
        "ledger_entries",
        sa.Column("sequence", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("memo", sa.String(length=500), nullable=False),
        sa.Column("reference", sa.String(length=100), nullable=True),
        sa.Column("real_money", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("sequence", name=op.f("pk_ledger_entries")),
        sa.UniqueConstraint("id", name=op.f("uq_ledger_entries_id")),
    )
    op.create_table(
        "domain_claims",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("domain", sa.String(length=253), nullable=False),
        sa.Column("verified_at", UTCDateTime(), nullable=False),
        sa.Column("grant_paid", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_domain_claims_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domain_claims")),
        sa.UniqueConstraint("account_id", "domain", name="uq_domain_claims_account_domain"),
    )
    with op.batch_alter_table("domain_claims", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_domain_claims_account_id"), ["account_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_domain_claims_domain"), ["domain"], unique=False)

    op.create_table(
        "ledger_holds",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("wallet_code", sa.String(length=64), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("reference", sa.String(length=100), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("settled_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('active', 'released', 'captured', 'lapsed')",
            name=op.f("ck_ledger_holds_status"),
        ),
        sa.CheckConstraint("amount_micro > 0", name=op.f("ck_ledger_holds_amount_positive")),
        sa.ForeignKeyConstraint(
            ["wallet_code"],
            ["ledger_accounts.code"],
            name=op.f("fk_ledger_holds_wallet_code_ledger_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_holds")),
    )
    with op.batch_alter_table("ledger_holds", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ledger_holds_wallet_active", ["wallet_code", "status", "expires_at"], unique=False
        )

    op.create_table(
        "ledger_postings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("entry_sequence", sa.Integer(), nullable=False),
        sa.Column("account_code", sa.String(length=64), nullable=False),
        sa.Column("amount_micro", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_code"],
            ["ledger_accounts.code"],
            name=op.f("fk_ledger_postings_account_code_ledger_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["entry_sequence"],
            ["ledger_entries.sequence"],
            name=op.f("fk_ledger_postings_entry_sequence_ledger_entries"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_postings")),
    )
    with op.batch_alter_table("ledger_postings", schema=None) as batch_op:
        batch_op.create_index("ix_ledger_postings_account_code", ["account_code"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_ledger_postings_entry_sequence"), ["entry_sequence"], unique=False
        )

    op.create_table(
        "reputation_facets",
        sa.Column("account_id", sa.String(length=36), nullable=False),
        sa.Column("role", sa.String(length=6), nullable=False),
        sa.Column("rating_sum", sa.Integer(), nullable=False),
        sa.Column("rating_count", sa.Integer(), nullable=False),
        sa.Column("finalized_count", sa.Integer(), nullable=False),
        sa.Column("non_delivery_count", sa.Integer(), nullable=False),
        sa.CheckConstraint("role IN ('buyer', 'seller')", name=op.f("ck_reputation_facets_role")),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_reputation_facets_account_id_accounts")
        ),
        sa.PrimaryKeyConstraint("account_id", "role", name=op.f("pk_reputation_facets")),
    )

    _make_journal_append_only()
    _seed_system_books()


# System books present from the start; later features add theirs in their own migrations.
SYSTEM_BOOKS = (
    "system:operator",
    "system:fees",
    "system:processor_a",
    "system:processor_b",
    "system:x402",
    "system:grants",
)


def _seed_system_books() -> None:
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
            for code in SYSTEM_BOOKS
        ],
    )


# The journal is append-only: the database itself refuses to alter or remove its rows.
JOURNAL_TABLES = ("ledger_entries", "ledger_postings")


def _make_journal_append_only() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for table in JOURNAL_TABLES:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
                )
        return
    op.execute(
        "CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$"
    )
    for table in JOURNAL_TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()"
        )


def downgrade() -> None:
    bind = op.get_bind()
    for table in JOURNAL_TABLES:
        if bind.dialect.name == "sqlite":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete")
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
    if bind.dialect.name != "sqlite":
        op.execute("DROP FUNCTION IF EXISTS ledger_refuse_change()")
    op.drop_table("reputation_facets")
    with op.batch_alter_table("ledger_postings", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_postings_entry_sequence"))
        batch_op.drop_index("ix_ledger_postings_account_code")

    op.drop_table("ledger_postings")
    with op.batch_alter_table("ledger_holds", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_holds_wallet_active")

    op.drop_table("ledger_holds")
    with op.batch_alter_table("domain_claims", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_domain_claims_domain"))
        batch_op.drop_index(batch_op.f("ix_domain_claims_account_id"))

    op.drop_table("domain_claims")
    op.drop_table("ledger_entries")
    op.drop_table("ledger_accounts")
    op.drop_table("job_leases")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_idempotency_keys_created_at"))

    op.drop_table("idempotency_keys")
    op.drop_table("accounts")
