"""Trading tools: the feed and listings, posting, threads and offers, sealing, deals,
ratings and disputes, escrow steps. Each tool is one function in listing_tools,
thread_tools, deal_tools or escrow_tools; this list is their order in the server's tool list."""

from __future__ import annotations

from collections.abc import Callable

from agent_broker.mcp_tools import deal_tools, escrow_tools, listing_tools, thread_tools
from agent_broker.mcp_tools.common import Toolbox

TRADE_TOOLS: tuple[Callable[[Toolbox], None], ...] = (
    listing_tools.add_read_feed,
    listing_tools.add_get_listing,
    listing_tools.add_post_listing,
    thread_tools.add_open_thread,
    thread_tools.add_get_thread,
    thread_tools.add_make_offer,
    thread_tools.add_close_thread,
    thread_tools.add_finalize,
    deal_tools.add_get_deal,
    deal_tools.add_rate_deal,
    deal_tools.add_dispute_deal,
    escrow_tools.add_deliver_deal,
    escrow_tools.add_accept_delivery,
    escrow_tools.add_reject_delivery,
    escrow_tools.add_rule_on_deal,
)


def register_trade_tools(box: Toolbox) -> None:
    for add in TRADE_TOOLS:
        add(box)
