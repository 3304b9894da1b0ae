"""What each soak client does: one round calls every write route of the interface once or
more (register, contact, route, post, open twice, offers, close, finalize, ratings,
dispute, attestations, certification cancel, a webhook set and removed, key rotation and
disabling), and keeps the money each of its accounts should hold.

A client owns three funded accounts: two trade with each other, swapping sides every
round, and a rival opens a competing thread that it closes itself on odd rounds (the
first included, so even a short run closes one) and that the seal auto-closes on even
ones. A newcomer registers every round (with an
Idempotency-Key on even rounds) and mints a statement."""

from __future__ import annotations

import secrets

from agent_broker.pricing import POSTING_FEE_MICRO
from bench.soak_accounts import (
    CONTACT,
    REGISTER,
    ROUTE,
    Account,
    Trader,
    new_key,
    register,
    set_profile,
)
from bench.soak_http import Answer, Caller

LISTINGS = "/v1/listings"
THREADS = "/v1/listings/{listing_id}/threads"
THREAD = "/v1/threads/{thread_id}"
OFFERS = "/v1/threads/{thread_id}/offers"
CLOSE = "/v1/threads/{thread_id}/close"
FINALIZE = "/v1/threads/{thread_id}/finalize"
RATINGS = "/v1/deals/{deal_id}/ratings"
DISPUTE = "/v1/deals/{deal_id}/dispute"
ATTESTATION = "/v1/account/reputation/attestation"
ROTATE = "/dashboard/keys/rotate"
DISABLE = "/dashboard/keys"
CERTIFICATION_CANCEL = "/v1/account/certification/cancel"
WEBHOOK = "/v1/account/webhook"

# Every write operation a round makes, as "METHOD path template".
WRITE_ROUTES = frozenset(
    {f"POST {REGISTER}", f"PUT {CONTACT}", f"PUT {ROUTE}", f"POST {LISTINGS}"}
    | {f"POST {route}" for route in (THREADS, OFFERS, CLOSE, FINALIZE, RATINGS, DISPUTE)}
    | {f"POST {ATTESTATION}", f"POST {ROTATE}", f"POST {DISABLE}"}
    | {f"POST {CERTIFICATION_CANCEL}", f"PUT {WEBHOOK}", f"DELETE {WEBHOOK}"}
)
# Write routes the soak leaves to tests of their own, and why.
DRIVEN_ELSEWHERE = {
    "POST /v1/account/domain/verify": "fetches from an outside HTTPS host "
    "(tests/domains/test_verify_concurrency.py races it on both databases)",
    "POST /dashboard/credits": "calls a processor's API (tests/payments)",
    "POST /webhooks/processor-a": "called by the processor (tests/payments races redeliveries)",
    "POST /webhooks/processor-b": "called by the processor (tests/payments races redeliveries)",
    "POST /v1/account/certification/test": "probes the account's deal route, an outside "
    "HTTPS host (tests/certification)",
    "POST /v1/account/certification": "needs a passing probe of an outside HTTPS deal route "
    "(tests/certification renews and lapses it through whole periods)",
    "POST /v1/account/wallet/challenge": "recovers keys of wallets an x402 payment linked, "
    "which needs a facilitator (tests/accounts/test_wallet_recovery.py races recoveries)",
    "POST /v1/account/wallet/recover": "as the challenge (tests/accounts/test_wallet_recovery.py)",
    "DELETE /dashboard/identities/{link_id}": "needs a linked identity: an identity "
    "provider's session or an x402 wallet (tests/dashboard/test_identities.py)",
    "POST /a2a": "writes nothing: an onboarding answer (tests/meta/test_a2a.py)",
}
PROOF_BUDGET = 100  # the service allows 120 proof mints per account per hour
AUDIENCE = "https://verifier.agents.dev"
LISTING_BODY = "I normalise columns, fix encodings and drop duplicate rows. Up to 1 GB per job."


async def attest(caller: Caller, account: Account, *, proof: bool) -> None:
    body = None
    if proof and account.proofs < PROOF_BUDGET:
        account.proofs += 1
        body = {"nonce": secrets.token_hex(16), "audience": AUDIENCE}
    await caller.call("POST", ATTESTATION, api_key=account.api_key, body=body, expect=(200,))


async def open_thread(caller: Caller, opener: Account, listing_id: str, diff: str) -> dict | None:
    answer = await caller.call(
        "POST",
        THREADS,
        params={"listing_id": listing_id},
        api_key=opener.api_key,
        body={"diff": diff},
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown_outcome(answer, opener)
    if answer.status != 201:
        return None
    opener.held_micro += answer.body["amount_micro"]
    return answer.body


async def offer(caller: Caller, account: Account, thread_id: str, diff: str) -> bool:
    """An offer; not idempotent, so a refusal out_of_turn after a lost attempt is checked
    against the thread: the lost attempt must have landed."""
    params = {"thread_id": thread_id}
    answer = await caller.call(
        "POST",
        OFFERS,
        params=params,
        api_key=account.api_key,
        body={"diff": diff},
        expect=(200,),
        after_retry={409: "out_of_turn"},
    )
    if not (answer.status == 409 and answer.retried):
        return answer.status == 200
    read = await caller.call("GET", THREAD, params=params, api_key=account.api_key)
    if read.status == 200 and read.body["diff"] == diff:
        return True
    caller.fail(f"offer on {thread_id} lost, refused out_of_turn, but not in the thread")
    return False


async def retire(caller: Caller, account: Account) -> None:
    """Rotate the newcomer's key, then disable the account with the new one. A lost
    rotation that landed leaves the new key unknown: its retry is refused with the old
    key (401), and the account is left as it is."""
    answer = await caller.call(
        "POST", ROTATE, api_key=account.api_key, expect=(200,), after_retry={401: "unauthorized"}
    )
    if answer.status != 200:
        return
    await caller.call(
        "POST",
        DISABLE,
        api_key=answer.body["api_key"],
        expect=(200,),
        after_retry={403: "api_key_disabled"},
    )


def _unknown_outcome(answer: Answer, *accounts: Account) -> None:
    if answer.status == 0:
        for account in accounts:
            account.uncertain = True


async def trade_round(caller: Caller, trader: Trader) -> None:
    """One round; it stops at the first answer the flow did not expect (already recorded)."""
    n = trader.rounds = trader.rounds + 1
    first, second, rival = trader.accounts
    seller, buyer = (first, second) if n % 2 else (second, first)
    tag = f"{trader.number}-{n}"

    newcomer = await register(caller, keyed=n % 2 == 0)
    if newcomer is not None:
        trader.newcomers.append(newcomer.account_id)
        await attest(caller, newcomer, proof=False)
        # Nothing to cancel: naturally idempotent, it answers the (empty) status record.
        await caller.call("POST", CERTIFICATION_CANCEL, api_key=newcomer.api_key, expect=(200,))
        # A webhook set and removed before any event: nothing is ever sent to it.
        hook = {"url": "https://hooks.agents.dev/events"}
        await caller.call("PUT", WEBHOOK, api_key=newcomer.api_key, body=hook, expect=(200,))
        await caller.call("DELETE", WEBHOOK, api_key=newcomer.api_key, expect=(204,))
        await retire(caller, newcomer)
    # Profiles change while trading; they stay complete, so threads may still open.
    if not (
        await set_profile(caller, seller, tag, contact=True)
        and await set_profile(caller, buyer, tag, contact=False)
    ):
        return
    listing_id = await post_listing(caller, seller, tag, sell=n % 2 == 1)
    if listing_id is None:
        return
    main = await open_thread(caller, buyer, listing_id, f"{tag}: 2 days, as listed")
    competing = await open_thread(caller, rival, listing_id, f"{tag}: 1 day, as listed")
    if main is None or competing is None:
        return
    if not (
        await offer(caller, seller, main["id"], f"{tag}: 3 days")
        and await offer(caller, buyer, main["id"], f"{tag}: agreed, 3 days")
    ):
        return
    if n % 2 == 1:
        if not await close(caller, rival, competing):
            return
        competing = None
    deal_id = await finalize(caller, seller, buyer, main, rival, competing)
    if deal_id is None:
        return
    trader.deals += 1
    # From the first round on, so even a short run disputes.
    await feedback(caller, seller, buyer, deal_id, dispute=n % 3 == 1)
    await attest(caller, seller, proof=False)
    await attest(caller, buyer, proof=n % 4 == 0)


async def post_listing(caller: Caller, seller: Account, tag: str, *, sell: bool) -> str | None:
    answer = await caller.call(
        "POST",
        LISTINGS,
        api_key=seller.api_key,
        body={
            "title": f"Soak listing {tag}",
            "category": "data_processing",
            "listing_type": "sell" if sell else "buy",
            "price_micro": 2_500_000,
            "body": LISTING_BODY,
            "delivery_deadline_days": 3,
        },
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown_outcome(answer, seller)
    if answer.status != 201:
        return None
    seller.spent_micro += POSTING_FEE_MICRO
    return answer.body["id"]


async def close(caller: Caller, opener: Account, thread: dict) -> bool:
    answer = await caller.call(
        "POST",
        CLOSE,
        params={"thread_id": thread["id"]},
        api_key=opener.api_key,
        idempotency_key=new_key(),
        expect=(200,),
    )
    _unknown_outcome(answer, opener)
    if answer.status != 200:
        return False
    if answer.body["status"] != "rejected":  # what closing an open thread makes it
        caller.fail(f"closing thread {thread['id']} left it {answer.body['status']}")
    opener.held_micro -= thread["amount_micro"]
    return True


async def finalize(
    caller: Caller,
    seller: Account,
    buyer: Account,
    thread: dict,
    rival: Account,
    competing: dict | None,
) -> str | None:
    """The seal: both sides pay the deal fee, and a competing thread still open is closed
    with its hold given back. The deal's id, or None."""
    answer = await caller.call(
        "POST",
        FINALIZE,
        params={"thread_id": thread["id"]},
        api_key=seller.api_key,
        idempotency_key=new_key(),
        expect=(201,),
    )
    _unknown_outcome(answer, seller, buyer, rival)
    if answer.status != 201:
        return None
    fee = thread["amount_micro"]
    buyer.held_micro -= fee
    buyer.spent_micro += fee
    seller.spent_micro += fee
    if competing is not None:
        rival.held_micro -= competing["amount_micro"]
    return answer.body["id"]


async def feedback(
    caller: Caller, seller: Account, buyer: Account, deal_id: str, *, dispute: bool
) -> None:
    deal = {"deal_id": deal_id}
    for rater, score in ((seller, 5), (buyer, 4)):
        await caller.call(
            "POST",
            RATINGS,
            params=deal,
            api_key=rater.api_key,
            body={"score": score, "delivered": True},
            expect=(201,),
            after_retry={409: "duplicate_rating"},
        )
    if dispute:
        await caller.call(
            "POST",
            DISPUTE,
            params=deal,
            api_key=buyer.api_key,
            expect=(201,),
            after_retry={409: "duplicate_dispute"},
        )
