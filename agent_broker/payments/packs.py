"""What an invoice may ask for (docs/interface.md §17.1): credit packs, per-processor bounds, the
chains processor_b offers and the whole packs each chain's minimum transaction needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_broker.config import Settings
from agent_broker.payments.errors import ProcessorUnavailable
from agent_broker.pricing import PACK_CREDITS, PACK_MICRO
from agent_broker.problems import InvalidInput

Processor = Literal["processor_a", "processor_b"]
Chain = Literal[
    "usdttrc20",
    "usdterc20",
    "usdc",
    "usdcsol",
    "usdtpolygon",
    "usdcpolygon",
    "usdtbase",
    "usdcbase",
]
PROCESSORS: tuple[Processor, ...] = ("processor_a", "processor_b")
DEFAULT_CHAIN: Chain = "usdtpolygon"
NOT_OFFERED = {"usdtbase": "USDT on Base is not offered; use usdcbase or another chain."}
PACK_BOUNDS = {"processor_a": (1, 10), "processor_b": (1, 200)}
# The fewest whole packs that cover each chain's minimum transaction (gas and the
# gateway's minimum make smaller payments uneconomic or impossible).
CHAIN_FLOOR_PACKS = {
    "usdttrc20": 20,
    "usdterc20": 4,
    "usdc": 4,
    "usdcsol": 1,
    "usdtpolygon": 1,
    "usdcpolygon": 1,
    "usdcbase": 1,
}
# The gateway's ticker for each chain: GET {api}/{ticker}/create/.
GATEWAY_TICKERS = {
    "usdttrc20": "trc20/usdt",
    "usdterc20": "erc20/usdt",
    "usdc": "erc20/usdc",
    "usdcsol": "sol/usdc",
    "usdtpolygon": "polygon/usdt",
    "usdcpolygon": "polygon/usdc",
    "usdcbase": "base/usdc",
}


@dataclass(frozen=True)
class Order:
    """A checked request: which processor ("stub" when none can take it on a deployment
    that is not production), which chain, and how many packs (raised to the chain's
    floor)."""

    processor: str
    chain: str | None
    pack_count: int

    @property
    def amount_micro(self) -> int:
        return self.pack_count * PACK_MICRO

    @property
    def credits(self) -> int:
        return self.pack_count * PACK_CREDITS


def order_for(
    settings: Settings, pack_count: int, processor: str | None, chain: str | None
) -> Order:
    # The chain is processor_b's alone: processor_a ignores it, whatever it names.
    if chain in NOT_OFFERED and processor != "processor_a":
        raise InvalidInput(NOT_OFFERED[chain])
    if processor is None:
        if settings.env == "production":
            raise InvalidInput("processor is required: one of " + ", ".join(PROCESSORS) + ".")
        return Order("stub", None, _within(pack_count, 1, PACK_BOUNDS["processor_b"][1], "any"))
    low, high = PACK_BOUNDS[processor]
    pack_count = _within(pack_count, low, high, processor)
    if processor == "processor_a":
        return _available(settings, Order("processor_a", None, pack_count))
    chain = chain or DEFAULT_CHAIN
    floor = CHAIN_FLOOR_PACKS[chain]
    return _available(settings, Order("processor_b", chain, max(pack_count, floor)))


def _within(pack_count: int, low: int, high: int, processor: str) -> int:
    if not low <= pack_count <= high:
        raise InvalidInput(
            f"pack_count must be between {low} and {high} for {processor} "
            f"(one pack is {PACK_CREDITS} credits)."
        )
    return pack_count


def _available(settings: Settings, order: Order) -> Order:
    """The order, a stub of it when its processor is not configured on a deployment that
    is not production, or 502 processor_unavailable on production."""
    configured = (
        settings.processor_a_configured
        if order.processor == "processor_a"
        else bool(settings.processor_b_api_url and settings.processor_b_address(order.chain or ""))
    )
    if configured:
        return order
    if settings.env != "production":
        return Order("stub", order.chain, order.pack_count)
    raise ProcessorUnavailable(
        f"{order.processor} is not configured on this deployment"
        + (f" for {order.chain}" if order.chain else "")
        + "; nothing was charged."
    )
