"""Feed search at 100,000 live listings on SQLite, measured in this process through the
service (the same statements GET /v1/feed runs): a page of 20 for a common word, a rare
one, two words, and a word in price order. Reports the slowest query's mean and p99."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

LISTINGS = 100_000
TARGET_MS = 20.0
WORDS = ("csv", "translation", "scraper", "summary", "audit", "pipeline", "invoice", "vision")
QUERIES = (
    {"q": "listing"},  # in every title: the page is the newest 20 of 100,000 matches
    {"q": "w7"},  # a word in about one listing in 5,000
    {"q": "translation vision"},  # one word of the title, one of the body
    {"q": "audit", "sort": "price_asc"},
)


def _seed(db, now) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import insert

    from agent_broker.accounts.models import Account
    from agent_broker.listings.models import Listing

    with db.writer() as session:
        session.execute(
            insert(Account.__table__).values(
                id="00000000-0000-4000-8000-000000000000",
                handle="000000000000",
                api_key_hash="bench",
                key_preview="bench",
                status="active",
                created_at=now,
            )
        )
        rows = [
            {
                "id": f"00000000-0000-4000-8000-{i:012d}",
                "poster_id": "00000000-0000-4000-8000-000000000000",
                "poster_handle": "000000000000",
                "status": "live",
                "listing_type": "sell" if i % 2 else "buy",
                "category": "data_processing",
                "title": f"Listing {i}: {WORDS[i % len(WORDS)]} work",
                "body": f"Done well, w{i % 5000}. {WORDS[(i * 7) % len(WORDS)]} included. " * 8,
                "price_micro": 1_000_000 + (i * 7919) % 100_000,
                "delivery_deadline_days": 3,
                "created_at": now - timedelta(seconds=LISTINGS - i),
                "expires_at": now + timedelta(days=7),
            }
            for i in range(LISTINGS)
        ]
        session.execute(insert(Listing.__table__), rows)
        session.commit()


def measure(runs: int = 30, *, verbose: bool = False) -> tuple[float, float]:
    """(mean ms, p99 ms) of the slowest query's page."""
    from agent_broker import clock
    from agent_broker.config import Settings
    from agent_broker.db.engine import create_database
    from agent_broker.listings.service import FeedQuery, feed
    from agent_broker.migrations.migrate import upgrade

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'search.db'}"
        upgrade(url)
        db = create_database(Settings(database_url=url, var_dir=folder))
        now = clock.now()
        try:
            _seed(db, now)
            worst = (0.0, 0.0)
            for params in QUERIES:
                timings = []
                for _ in range(runs):
                    with db.reader() as session:
                        started = time.perf_counter()
                        page = feed(session, FeedQuery(**params), now=now)
                        timings.append((time.perf_counter() - started) * 1000)
                assert page["listings"], params
                timings.sort()
                result = (statistics.fmean(timings), timings[int(len(timings) * 0.99) - 1])
                if verbose:
                    print(f"  {params}: {result[0]:.1f} ms mean, p99 {result[1]:.1f} ms")
                worst = max(worst, result)
        finally:
            db.dispose()
    return worst


if __name__ == "__main__":
    mean_ms, p99_ms = measure(verbose=True)
    print(f"feed search: {mean_ms:.1f} ms mean, p99 {p99_ms:.1f} ms per page at 100k listings")
