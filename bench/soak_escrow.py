"""The soak's escrow deals: after its direct round, each client trades one escrow deal
between its two traders, the rival named as the listing's evaluator.

Deals alternate, from one round to the next and from one client to the next (so that
even a one-round run has every kind), between a delivery rejected and ruled by the rival
and a delivery accepted, and between an escrow sell listing (the buyer opens, its price
held from then) and buy listing (the buyer posts and pays the price at the seal). The
buyer's reply names a new price, which on a sell listing replaces the price hold.
Rulings rotate through split, refund and release. The driver works out each settlement
itself and checks it against the answer; the money it moves is kept on the accounts
(bench.soak_accounts) for the closing checks. The deadline job is not driven: a soak
cannot move the service's clock (tests/escrow drives it)."""

from __future__ import annotations

from agent_broker.pricing import POSTING_FEE_MICRO
from bench.soak_accounts import Account, Trader, new_key
from bench.soak_flow import FINALIZE, LISTING_BODY, LISTINGS, OFFERS, THREAD, THREADS
from bench.soak_http import Answer, Caller

DELIVERY = "/v1/deals/{deal_id}/delivery"
ACCEPTANCE = "/v1/deals/{deal_id}/acceptance"
REJECTION = "/v1/deals/{deal_id}/rejection"
RULING = "/v1/deals/{deal_id}/ruling"
ESCROW_ROUTES = frozenset(f"POST {route}" for route in (DELIVERY, ACCEPTANCE, REJECTION, RULING))
LISTED_PRICE = 2_500_000
AGREED_PRICE = 2_000_000
BPS = 10_000
RULINGS = (
    {"outcome": "split", "seller_share_bps": 6_000},
    {"outcome": "refund"},
    {"outcome": "release"},
)


async def escrow_round(caller: Caller, trader: Trader) -> None:
    """One escrow deal of the round `trader` has just played; it stops at the first answer
    the flow did not expect (already recorded)."""
    n = trader.rounds
    first, second, evaluator = trader.accounts
    seller, buyer = (first, second) if n % 2 else (second, first)
    kind = trader.number + n - 1
    rejected, sell = kind % 2 == 0, kind // 2 % 2 == 0
    poster, opener = (seller, buyer) if sell else (buyer, seller)
    tag = f"{trader.number}-{n}-escrow"
    if evaluator.handle is None and not await _learn_handle(caller, evaluator):
        return
    listing_id = await _post(caller, poster, evaluator, tag, sell=sell)
    if listing_id is None:
        return
    thread = await _open(caller, opener, listing_id, tag, holds_price=sell)
    if thread is None:
        return
    holder = buyer if sell else None  # whose price hold follows its offers
    if not (
        await _offer(caller, poster, thread, f"{tag}: 3 days", None, holder)
        and await _offer(caller, opener, thread, f"{tag}: agreed", AGREED_PRICE, holder)
    ):
        return
    deal = await _seal(caller, poster, opener, buyer, thread)
    if deal is None:
        return
    trader.escrow_deals += 1
    if not await _step(caller, seller, DELIVERY, deal, {"note": f"{tag} delivered"}, (buyer,)):
        return
    if rejected:
        if not await _step(caller, buyer, REJECTION, deal, {"reason": "not as agreed"}, (buyer,)):
            return
        ruling = {**RULINGS[kind // 2 % len(RULINGS)], "reason": "read both sides"}
        settled = await _step(caller, evaluator, RULING, deal, ruling, (buyer, seller))
    else:
        settled = await _step(caller, buyer, ACCEPTANCE, deal, None, (buyer, seller))
    if settled is not None:
        _settled(caller, settled, deal, seller, buyer)


async def _learn_handle(caller: Caller, account: Account) -> bool:
    answer = await caller.call("GET", "/v1/account", api_key=account.api_key, expect=(200,))
    if answer.status != 200:
        return False
    account.handle = answer.body["handle"]
    return True


def _unknown(answer: Answer, *accounts: Account) -> None:
    if answer.status == 0:
        for account in accounts:
            account.uncertain = True


async def _post(
    caller: Caller, poster: Account, evaluator: Account, tag: str, *, sell: bool
) -> str | None:
    answer = await caller.call(
        "POST",
        LISTINGS,
        api_key=poster.api_key,
        body={
            "title": f"Soak escrow listing {tag}",
            "category": "data_processing",
            "listing_type": "sell" if sell else "buy",
            "price_micro": LISTED_PRICE,
            "body": LISTING_BODY,
            "settlement": "escrow",
            "evaluator": evaluator.handle,
        },
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown(answer, poster)
    if answer.status != 201:
        return None
    poster.spent_micro += POSTING_FEE_MICRO
    return answer.body["id"]


async def _open(
    caller: Caller, opener: Account, listing_id: str, tag: str, *, holds_price: bool
) -> dict | None:
    answer = await caller.call(
        "POST",
        THREADS,
        params={"listing_id": listing_id},
        api_key=opener.api_key,
        body={"diff": f"{tag}: 2 days, as listed"},
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown(answer, opener)
    if answer.status != 201:
        return None
    thread = dict(answer.body)  # the driver's copy: the answer is kept for replays
    opener.held_micro += thread["amount_micro"]
    if holds_price:  # the buyer opened: its price is held too
        opener.held_micro += thread["price_micro"]
    return thread


async def _offer(
    caller: Caller,
    account: Account,
    thread: dict,
    diff: str,
    price: int | None,
    holder: Account | None,
) -> bool:
    """An offer, maybe naming a price (the thread follows it); the price hold of `holder`,
    the buyer who opened, follows the prices it names. Not idempotent: a refusal
    out_of_turn after a lost attempt must find the lost one in the thread."""
    thread_id = thread["id"]
    params = {"thread_id": thread_id}
    body: dict = {"diff": diff} if price is None else {"diff": diff, "price_micro": price}
    answer = await caller.call(
        "POST",
        OFFERS,
        params=params,
        api_key=account.api_key,
        body=body,
        expect=(200,),
        after_retry={409: "out_of_turn"},
    )
    if answer.status == 409 and answer.retried:
        answer = await caller.call("GET", THREAD, params=params, api_key=account.api_key)
        if answer.status != 200 or answer.body["diff"] != diff:
            caller.fail(f"offer on {thread_id} lost, refused out_of_turn, but not in the thread")
            return False
    elif answer.status != 200:
        return False
    if price is not None:
        if account is holder:
            holder.held_micro += price - thread["price_micro"]
        thread["price_micro"] = price
    return True


async def _seal(
    caller: Caller, poster: Account, opener: Account, buyer: Account, thread: dict
) -> dict | None:
    """The seal: both sides pay the deal fee and the buyer's price moves into escrow
    (from its hold on a sell listing, from its balance on a buy listing)."""
    answer = await caller.call(
        "POST",
        FINALIZE,
        params={"thread_id": thread["id"]},
        api_key=poster.api_key,
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown(answer, poster, opener)
    if answer.status != 201:
        return None
    fee, price = thread["amount_micro"], thread["price_micro"]
    opener.held_micro -= fee
    opener.spent_micro += fee
    poster.spent_micro += fee
    if buyer is opener:
        buyer.held_micro -= price
    buyer.escrowed_micro += price
    held = answer.body.get("escrow") or {}
    if (held.get("status"), held.get("amount_micro")) != ("held", price):
        caller.fail(f"deal {answer.body['id']} sealed with escrow {held!r:.200}, not {price} held")
    return answer.body


async def _step(
    caller: Caller,
    account: Account,
    route: str,
    deal: dict,
    body: dict | None,
    moved: tuple[Account, ...],
) -> dict | None:
    """An escrow step (Idempotency-Key required): the escrow as it answers, or None."""
    answer = await caller.call(
        "POST",
        route,
        params={"deal_id": deal["id"]},
        api_key=account.api_key,
        body=body,
        idempotency_key=new_key(),
        expect=(200,),
    )
    _unknown(answer, *moved)
    return answer.body["escrow"] if answer.status == 200 else None


def _settled(caller: Caller, escrow: dict, deal: dict, seller: Account, buyer: Account) -> None:
    """Move the driver's money as the settlement must have: the seller's share less the
    escrow fee to the seller, the fee to the fee book, the rest back to the buyer."""
    amount, fee_bps = escrow["amount_micro"], escrow["fee_bps"]
    ruling = escrow.get("ruling")
    share_bps = BPS if ruling is None else ruling["seller_share_bps"]
    share = amount * share_bps // BPS
    fee = share * fee_bps // BPS
    expected = {"released_micro": share - fee, "refunded_micro": amount - share, "fee_micro": fee}
    paid = {key: (escrow.get("settlement") or {}).get(key) for key in expected}
    if paid != expected:
        caller.fail(f"escrow of deal {deal['id']} settled {paid}, expected {expected}")
    buyer.escrowed_micro -= amount
    buyer.escrow_out_micro += share
    seller.escrow_out_micro -= share
    seller.spent_micro += fee
