"""Every credit amount the service charges or grants, defined once. Money is integer
micro-USD and a credit is 500 µUSD, so the 2,000-credit deal fee is 1,000,000 µUSD.
No other module holds a price."""

from __future__ import annotations

CREDIT_MICRO = 500  # 1 credit = 500 µUSD


def credits(count: int) -> int:
    """µUSD for a whole number of credits."""
    return count * CREDIT_MICRO


def whole_credits(amount_micro: int) -> int:
    """Whole credits in an amount, truncated (the profile's balance_credits)."""
    return amount_micro // CREDIT_MICRO


POSTING_FEE_MICRO = credits(200)  # posting a listing
DEAL_FEE_MICRO = credits(2_000)  # per side: held from the opener, charged to the poster
PACK_CREDITS = 1_000  # one credit pack bought through a processor or x402
PACK_MICRO = credits(PACK_CREDITS)
DOMAIN_GRANT_MICRO = credits(20_000)  # the welcome credit for a first domain proof
CERTIFICATION_PERIOD_MICRO = credits(18_000)  # one 30-day certification period


def usd(micro: int) -> str:
    """Dollars with two decimals, for display only (half-up to whole cents, no floats)."""
    cents = (micro + 5_000) // 10_000
    return f"{cents // 100}.{cents % 100:02d}"
