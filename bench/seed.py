"""Seed the benchmark database directly through the service layer (run as a subprocess
with the server's environment): one account funded with real money, and N live listings
for the feed. Prints the account's API key as JSON on stdout."""

from __future__ import annotations

import json
import sys
from datetime import timedelta

from agent_broker import clock
from agent_broker.accounts.models import Account
from agent_broker.accounts.service import set_contact
from agent_broker.config import Settings
from agent_broker.db.engine import create_database
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.ledger import books
from agent_broker.ledger.service import credit
from agent_broker.listings.models import Listing
from agent_broker.membership.service import register, set_route
from agent_broker.pricing import POSTING_FEE_MICRO

CATEGORIES = ("data_processing", "translation", "code_generation", "research", "web_scraping")
BODY = "Reliable service with clear terms. " * 20


def _new_account(session, settings: Settings, now):  # noqa: ANN001, ANN202
    return register(
        session, settings, RateLimiter(settings), accepted_terms=True, source="bench", now=now
    )


def seed(listings: int) -> str:
    settings = Settings()
    db = create_database(settings)
    now = clock.now()
    try:
        with db.writer() as session:
            made = _new_account(session, settings, now)
            # Enough real money to post for the whole run, and no listing cap.
            credit(
                session,
                made.account_id,
                1_000_000 * POSTING_FEE_MICRO,
                source=books.OPERATOR,
                kind="bench_seed",
                memo="benchmark funding",
                now=now,
                real_money=True,
            )
            handle = session.get(Account, made.account_id).handle
            session.bulk_insert_mappings(
                Listing,
                [
                    {
                        "id": f"00000000-0000-4000-8000-{i:012d}",
                        "poster_id": made.account_id,
                        "poster_handle": handle,
                        "status": "live",
                        "listing_type": "sell" if i % 2 else "buy",
                        "category": CATEGORIES[i % len(CATEGORIES)],
                        "title": f"Benchmark listing {i}",
                        "body": BODY,
                        "price_micro": 1_000_000 + i,
                        "delivery_deadline_days": 3,
                        "created_at": now - timedelta(seconds=listings - i),
                        "expires_at": now + timedelta(days=7),
                    }
                    for i in range(listings)
                ],
            )
            session.commit()
    finally:
        db.dispose()
    return made.api_key


def traders(pairs: int) -> list[list[str]]:
    """Pairs of accounts (seller, buyer) with complete profiles and ample real money."""
    settings = Settings()
    db = create_database(settings)
    now = clock.now()
    keys = []
    try:
        with db.writer() as session:
            for i in range(2 * pairs):
                made = _new_account(session, settings, now)
                account = session.get(Account, made.account_id)
                set_contact(
                    session, account, name=f"Trader {i}", email=f"ops{i}@agents.dev", url=None
                )
                set_route(
                    session,
                    settings,
                    account,
                    deal_route=f"https://agents.dev/t{i}/",
                    binding="JSONRPC",
                    agent_card_url=None,
                )
                credit(
                    session,
                    made.account_id,
                    1_000_000_000_000,
                    source=books.OPERATOR,
                    kind="bench_seed",
                    memo="benchmark funding",
                    now=now,
                    real_money=True,
                )
                keys.append(made.api_key)
            session.commit()
    finally:
        db.dispose()
    return [keys[i : i + 2] for i in range(0, len(keys), 2)]


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "traders":
        print(json.dumps(traders(int(sys.argv[2]))))
    else:
        count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
        print(json.dumps({"api_key": seed(count)}))
