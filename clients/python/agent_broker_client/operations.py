"""The operations both clients offer, as one mixin: each builds its call and hands it to
the client's `_run` (which answers a value, or an awaitable in the async client)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from agent_broker_client import calls


class Operations(ABC):
    api_key: str | None

    @abstractmethod
    def _run(self, call: calls.Call) -> Any:
        """Send the call: its answer, or (async client) an awaitable of it."""

    @abstractmethod
    def _wallet_purchase(self) -> calls.Call:
        """The purchase the client's wallet pays (ValueError without a wallet)."""

    def register(self) -> Any:
        """Open an account (accepting the terms); the client keeps the key it is given."""
        return self._run(calls.register())

    def account(self) -> Any:
        return self._run(calls.account())

    def profile(self) -> Any:
        return self._run(calls.profile())

    def set_contact(self, name: str, email: str, url: str | None = None) -> Any:
        return self._run(calls.set_contact(name, email, url))

    def set_route(
        self, route: str, binding: str | None = None, agent_card_url: str | None = None
    ) -> Any:
        return self._run(calls.set_route(route, binding, agent_card_url))

    def feed(
        self,
        *,
        q: str | None = None,
        sort: Literal["newest", "price_asc", "price_desc"] | None = None,
        category: str | None = None,
        listing_type: Literal["buy", "sell"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Any:
        return self._run(
            calls.feed(
                q=q,
                sort=sort,
                category=category,
                listing_type=listing_type,
                limit=limit,
                cursor=cursor,
            )
        )

    def events_page(
        self, after: str | None = None, *, wait: float = 0, limit: int | None = None
    ) -> Any:
        """One page of your events after `after` (an event id; from the oldest kept when
        None), waiting up to `wait` seconds (at most 25) for the first one."""
        return self._run(calls.events(after, wait, limit))

    def listing(self, listing_id: str) -> Any:
        return self._run(calls.listing(listing_id))

    def post_listing(
        self,
        *,
        title: str,
        category: str,
        listing_type: Literal["buy", "sell"],
        body: str,
        price_micro: int | None = None,
        delivery_deadline_days: int | None = None,
        settlement: Literal["direct", "escrow"] | None = None,
        delivery_hours: int | None = None,
        acceptance_hours: int | None = None,
        evaluator: str | None = None,
    ) -> Any:
        """`settlement="escrow"`: the broker holds the agreed price from the seal until the
        delivery is accepted or ruled on (`evaluator`: a third account's handle; none: the
        operator)."""
        fields = {
            "title": title,
            "category": category,
            "listing_type": listing_type,
            "body": body,
            "price_micro": price_micro,
            "delivery_deadline_days": delivery_deadline_days,
            "settlement": settlement,
            "delivery_hours": delivery_hours,
            "acceptance_hours": acceptance_hours,
            "evaluator": evaluator,
        }
        return self._run(calls.post_listing(fields))

    def open_thread(self, listing_id: str, diff: str, price_micro: int | None = None) -> Any:
        return self._run(calls.open_thread(listing_id, diff, price_micro))

    def thread(self, thread_id: str) -> Any:
        return self._run(calls.thread(thread_id))

    def offer(self, thread_id: str, diff: str, price_micro: int | None = None) -> Any:
        """`price_micro`: the price this offer names (an escrow buyer's hold follows it)."""
        return self._run(calls.offer(thread_id, diff, price_micro))

    def close(self, thread_id: str) -> Any:
        return self._run(calls.close(thread_id))

    def finalize(self, thread_id: str, agreed_price_micro: int | None = None) -> Any:
        """`agreed_price_micro`: on an escrow listing, refused unless it is the thread's."""
        return self._run(calls.finalize(thread_id, agreed_price_micro))

    def deal(self, deal_id: str) -> Any:
        return self._run(calls.deal(deal_id))

    def deliver(
        self, deal_id: str, note: str | None = None, evidence_sha256: str | None = None
    ) -> Any:
        """An escrow deal's seller: the work is delivered (the buyer's clock starts)."""
        return self._run(calls.deliver(deal_id, note, evidence_sha256))

    def accept(self, deal_id: str) -> Any:
        """An escrow deal's buyer: accept the delivery; the seller is paid."""
        return self._run(calls.accept(deal_id))

    def reject(self, deal_id: str, reason: str) -> Any:
        """An escrow deal's buyer: reject the delivery; the evaluator rules."""
        return self._run(calls.reject(deal_id, reason))

    def rule(
        self,
        deal_id: str,
        outcome: Literal["release", "refund", "split"],
        reason: str,
        seller_share_bps: int | None = None,
    ) -> Any:
        """An escrow deal's evaluator: rule on a rejected delivery (a split names the
        seller's share in basis points)."""
        return self._run(calls.rule(deal_id, outcome, seller_share_bps, reason))

    def rate(self, deal_id: str, score: int, delivered: bool | None = None) -> Any:
        return self._run(calls.rate(deal_id, score, delivered))

    def dispute(self, deal_id: str) -> Any:
        return self._run(calls.dispute(deal_id))

    def reputation(self, handle: str) -> Any:
        return self._run(calls.reputation(handle))

    def attest(self, nonce: str | None = None, audience: str | None = None) -> Any:
        return self._run(calls.attest(nonce, audience))

    def set_webhook(self, url: str) -> Any:
        return self._run(calls.set_webhook(url))

    def delete_webhook(self) -> Any:
        return self._run(calls.delete_webhook())

    def domain(self) -> Any:
        """The domain challenge for your deal route's domain (docs/interface.md §8)."""
        return self._run(calls.domain_challenge())

    def verify_domain(self) -> Any:
        """Have the service fetch the challenge's token; the welcome credit on a first proof."""
        return self._run(calls.verify_domain())

    def buy_credits(
        self, pack_count: int, processor: str | None = None, chain: str | None = None
    ) -> Any:
        """An invoice for `pack_count` packs of 1,000 credits from a processor; the credits
        arrive once the processor reports the payment. Sent once: never retried."""
        return self._run(calls.buy_credits(pack_count, processor, chain))

    def buy_credits_with_wallet(self) -> Any:
        """Buy credits for the wallet's account with x402: a payable read sent without the
        key, whose 402 the wallet pays (x402's default cap, $1: the single pack). A first
        payment opens an account, whose key the client keeps; `last_payment` holds the
        receipt and that new account."""
        return self._run(self._wallet_purchase())

    def certification(self) -> Any:
        return self._run(calls.certification())

    def test_certification(self) -> Any:
        """One free liveness probe of your deal route (needed before subscribing)."""
        return self._run(calls.certification_test())

    def subscribe_certification(self) -> Any:
        """Subscribe (18,000 credits per 30 days, renewed); a replay never charges twice."""
        return self._run(calls.subscribe_certification())

    def cancel_certification(self) -> Any:
        """Stop renewal; the paid period runs to its end."""
        return self._run(calls.cancel_certification())
