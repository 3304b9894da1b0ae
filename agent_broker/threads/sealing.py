"""Sealing a thread into a deal (finalize): under the listing's lock, the seal captures the
opener's held fee and charges the poster's through the ledger, marks the listing matched,
auto-closes the competing threads and releases their holds, creates the deal and answers
its package with the reveal. One transaction; the negotiation before it is
agent_broker.threads.service."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from agent_broker.accounts import identities
from agent_broker.accounts import service as accounts
from agent_broker.accounts.models import AccountRecord
from agent_broker.deals import service as deals
from agent_broker.escrow import service as escrow
from agent_broker.escrow.errors import HeldFundsMismatch
from agent_broker.escrow.service import EscrowTerms
from agent_broker.idempotency.service import IdempotencyKey, Outcome, run_once
from agent_broker.ledger import books
from agent_broker.ledger import escrow as ledger_escrow
from agent_broker.ledger import service as ledger
from agent_broker.listings import service as listings
from agent_broker.listings.views import ListingLike, poster_role
from agent_broker.problems import Forbidden, NotFound
from agent_broker.threads import repository
from agent_broker.threads.errors import ListingExpired, OutOfTurn
from agent_broker.threads.models import Thread
from agent_broker.threads.service import party_thread, refuse_unless_open, release_holds
from agent_broker.tokens.keys import Signer
from agent_broker.webhooks import service as webhooks


def finalize(
    session: Session,
    poster: AccountRecord,
    thread_id: str,
    *,
    signer: Signer,
    now: datetime,
    escrow_fee_bps: int,
    agreed_price_micro: int | None = None,
) -> dict:
    """Seal the thread: capture the opener's held fee and charge the poster's, create the
    deal, mark the listing matched, auto-close competing threads and release their holds.
    On an escrow listing the buyer's price moves into escrow too (sealing.escrow).
    One transaction: any refusal leaves everything as it was."""
    # Locks in one order: the listing, its open threads, then every wallet the seal moves
    # (ledger.locks). The listing lock serialises finalize against finalize and against
    # opening; the thread is read under it, as a competing seal may have closed it. (A
    # caller who is no party holds the locks only until its refusal rolls back.)
    locked_listing = repository.lock_listing_of_later(session, thread_id)
    # The open threads, sent with the listing's lock above.
    competitors = repository.lock_open_threads_on_listing_of(session, thread_id)
    listing = locked_listing()
    # An open thread is among them; any other is read to say why it cannot be sealed.
    thread = next((t for t in competitors if t.id == thread_id), None)
    if thread is not None and poster.id in (thread.poster_id, thread.opener_id):
        side = "poster" if poster.id == thread.poster_id else "negotiator"
    else:
        thread, side = party_thread(session, thread_id, poster.id)
    if side != "poster":
        raise Forbidden("Only the listing's poster may finalize; nothing moved.")
    if listing is None:
        raise NotFound("No such listing.")
    refuse_unless_open(thread, now)
    if thread.turn != "poster":
        raise OutOfTurn("Your last offer is unanswered: the negotiator's diff must stand to seal.")
    if not listings.is_live(listing, now):
        raise ListingExpired("The listing is no longer live; nothing was charged.")
    terms = listings.terms_of(listing)
    if terms is not None and agreed_price_micro not in (None, thread.price_micro):
        raise HeldFundsMismatch(
            "agreed_price_micro is not the thread's price; nothing was sealed. Read the thread"
            " for its price_micro."
        )
    negotiator = accounts.record(session, thread.opener_id)
    deals.ensure_routes(poster, negotiator)
    ledger.lock_wallets(session, [poster.id, *(t.opener_id for t in competitors)])
    # Conditional on the thread still being open: anything else is a conflict.
    if not repository.finalize_if_open(session, thread.id, now=now):
        thread, _ = party_thread(session, thread_id, poster.id)
        refuse_unless_open(thread, now)
        raise OutOfTurn()
    ledger.capture_hold(
        session,
        thread.hold_id,
        sink=books.FEES,
        kind="deal_fee",
        memo="deal fee, negotiator side",
        now=now,
        # The opener's wallet: locked above, as the sealed thread is among `competitors`.
        locked_wallet=books.wallet_code(thread.opener_id),
    )
    ledger.charge(
        session,
        poster.id,
        thread.amount_micro,
        sink=books.FEES,
        kind="deal_fee",
        memo="deal fee, poster side",
        reference=thread.id,
        now=now,
    )
    listings.mark_matched(session, listing.id)
    _auto_close_competitors(session, thread, competitors, now)
    deal = deals.seal(
        session,
        thread_id=thread.id,
        listing_id=thread.listing_id,
        poster=poster,
        negotiator=negotiator,
        amount_micro=thread.amount_micro,
        poster_role=poster_role(listing),
        category=listing.category,
        settlement=listing.settlement,
        now=now,
    )
    held = None
    if terms is not None:
        held = _hold_price(session, deal, thread, listing, terms, fee_bps=escrow_fee_bps, now=now)
    sealed = {"deal_id": deal.id, "thread_id": thread.id, "listing_id": thread.listing_id}
    webhooks.enqueue_for_both(
        session, (poster.id, negotiator.id), "deal.sealed", deal.id, sealed, now=now
    )
    return deals.package(deal, poster.id, signer=signer, now=now, held=held)


def _hold_price(
    session: Session,
    deal: Any,
    thread: Thread,
    listing: ListingLike,
    terms: EscrowTerms,
    *,
    fee_bps: int,
    now: datetime,
) -> escrow.Escrow:
    """Move the buyer's price into escrow and record the escrow. On a sell listing the
    buyer (the opener) holds it already and the hold must be exactly the price; on a buy
    listing the poster is the buyer and pays it now (402 when short)."""
    price = thread.price_micro or 0
    if listing.listing_type == "sell":
        buyer_id, seller_id = thread.opener_id, thread.poster_id
        held = 0
        if thread.price_hold_id:
            held = ledger_escrow.hold_from_thread_hold(
                session,
                thread.price_hold_id,
                deal_id=deal.id,
                locked_wallet=books.wallet_code(buyer_id),
                now=now,
            )
        if held != price:
            raise HeldFundsMismatch()
    else:
        buyer_id, seller_id = thread.poster_id, thread.opener_id
        if price:
            ledger_escrow.hold_by_charge(session, buyer_id, price, deal_id=deal.id, now=now)
    return escrow.open_escrow(
        session,
        deal_id=deal.id,
        buyer_id=buyer_id,
        seller_id=seller_id,
        amount_micro=price,
        terms=terms,
        fee_bps=fee_bps,
        counts_for_reputation=deal.counts_for_reputation,
        now=now,
    )


def _auto_close_competitors(
    session: Session, sealed: Thread, threads: list[Thread], now: datetime
) -> None:
    for other in threads:
        if other.id == sealed.id:
            continue
        # Locked and seen open above: nothing else can have moved it.
        if not repository.close_if_open(session, other.id, now=now):
            raise listings.ListingConflict()
        release_holds(session, other, now=now)
        data = {**webhooks.thread_data(other), "status": "closed", "reason": "sealed_elsewhere"}
        webhooks.enqueue(session, other.opener_id, "thread.auto_closed", other.id, data, now=now)


# --- Idempotency-Key wrapper: the same call, through any front door, happens once ------


def finalize_once(
    session: Session,
    poster: AccountRecord,
    thread_id: str,
    key: IdempotencyKey,
    *,
    signer: Signer,
    now: datetime,
    one_time_token: tuple[str, str, int] | None = None,
    escrow_fee_bps: int,
    agreed_price_micro: int | None = None,
) -> Outcome:
    """Seal once per key. The package carries a bearer credential, so only the deal id is
    kept; a replay renders the same (deterministic) package again from the deal. An agent
    OAuth token seals once: it is spent with the seal (a replay with the same key is
    still answered from the first seal)."""

    def seal() -> Outcome:
        if one_time_token is not None:
            identities.spend(session, one_time_token, now=now)
        sealed = finalize(
            session,
            poster,
            thread_id,
            signer=signer,
            now=now,
            escrow_fee_bps=escrow_fee_bps,
            agreed_price_micro=agreed_price_micro,
        )
        return Outcome(201, sealed)

    return run_once(
        session,
        poster.id,
        key,
        seal,
        now=now,
        stored=lambda body: {"deal_id": body["id"]},
        replayed=lambda kept: Outcome(
            kept.status,
            deals.read(session, poster.id, kept.body["deal_id"], signer=signer, now=now),
            replayed=True,
        ),
    )
