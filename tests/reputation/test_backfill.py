"""Migration 0006 backfills the scorecard counters from the history already recorded: on a
database with deals, ratings and disputes, the backfill must rebuild exactly what the write
path keeps (last activity aside, which no earlier record holds)."""

from __future__ import annotations

from datetime import timedelta

from alembic import command
from sqlalchemy import create_engine, text

from agent_broker import clock
from agent_broker.migrations.migrate import alembic_config, upgrade
from tests.support.market import dispute, rate, seal, seller_with_listings, trader

TABLES = {
    "reputation_stats": "SELECT * FROM reputation_stats ORDER BY account_id",
    "reputation_sales": "SELECT * FROM reputation_sales ORDER BY account_id, category",
    "reputation_counterparties": (
        "SELECT * FROM reputation_counterparties ORDER BY account_id, counterparty_id"
    ),
}


def _snapshot(url: str) -> dict[str, list[dict]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = {}
            for name, query in TABLES.items():
                rows = [dict(row._mapping) for row in conn.execute(text(query))]
                for row in rows:
                    row.pop("last_active_at", None)
                found[name] = rows
            return found
    finally:
        engine.dispose()


def _downgrade_to_0005(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            cfg = alembic_config(url)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0005")
    finally:
        engine.dispose()


def test_the_backfill_rebuilds_what_the_write_path_keeps(app, client, database_url):
    poster, listings = seller_with_listings(app, client, 4, category="translation")
    buyers = [trader(app, client) for _ in range(3)]
    deals = [
        seal(client, poster, buyer, listing)
        for buyer, listing in zip(buyers, listings[:3], strict=True)
    ]
    seal(client, poster, buyers[0], listings[3])  # a repeat counterparty
    clock.advance(timedelta(hours=5))
    assert rate(client, buyers[0], deals[0], score=3, delivered=False).status_code == 201
    assert rate(client, poster, deals[0], score=5).status_code == 201
    clock.advance(timedelta(days=2))
    assert rate(client, buyers[1], deals[1], score=4).status_code == 201
    assert dispute(client, buyers[2], deals[2]).status_code == 201
    written = _snapshot(database_url)
    assert len(written["reputation_counterparties"]) == 6  # three pairs, both directions

    app.state.context.db.dispose()
    _downgrade_to_0005(database_url)
    upgrade(database_url)
    assert _snapshot(database_url) == written
