"""The tools: one per agent operation, each calling the service its REST route calls, with
the route's request model, idempotency and response model. Prices are in each
description; hints say what a tool changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field, TypeAdapter

from agent_broker import clock
from agent_broker.accounts import service as accounts
from agent_broker.accounts.schemas import (
    AccountOut,
    AccountProfileOut,
    ContactRequest,
    RegisterAccountResponse,
    RouteRequest,
)
from agent_broker.deals import feedback
from agent_broker.deals import service as deals
from agent_broker.deals.schemas import DealPackage, RatingRequest
from agent_broker.domains import proof
from agent_broker.domains import service as domains
from agent_broker.domains.schemas import DomainChallengeOut, DomainVerificationOut
from agent_broker.http.client_ip import client_ip
from agent_broker.ledger import verdict
from agent_broker.listings import service as listings
from agent_broker.listings.schemas import FeedPage, ListingOut, PostListingRequest
from agent_broker.mcp_tools.plumbing import (
    account_of,
    as_caller,
    idempotency,
    in_transaction,
    parsed,
    reasoned,
)
from agent_broker.reputation import attestation, records
from agent_broker.reputation.schemas import PublicReputation, ReputationAttestation
from agent_broker.scanning.brake import screen_for
from agent_broker.threads import service as threads
from agent_broker.threads.schemas import DiffRequest, ThreadOut, ThreadRead
from agent_broker.tokens.startup import signer_of

Result = dict[str, Any]
READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Changes only the caller's own settings; the same call twice leaves the same state.
SETS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Creates or moves something (credits, a listing, a thread); retried safely with its key.
KEYED = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Irreversible: seals, closes or disputes for good.
FINAL = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
ONCE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# Reaches the caller's own domain over the network.
PROVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)

IdempotencyKeyArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=255,
        description="Any 1-255 printable ASCII characters (a UUID): a retry with the same key "
        "returns the first answer and never charges twice",
    ),
]
Id = Annotated[str, Field(min_length=1, max_length=100)]


def shaped(model: Any, data: Any, *, exclude_none: bool = True) -> Result:
    """The body the REST route would answer, through its response model (or union)."""
    adapter = TypeAdapter(model)
    return adapter.dump_python(
        adapter.validate_python(data), mode="json", exclude_none=exclude_none
    )


def register_tools(
    server: MCPServer, app: FastAPI, key_of: Callable[[Context], str | None]
) -> None:
    state = app.state

    def source(ctx: Context) -> str:
        request = ctx.request_context.request
        return client_ip(request) if request is not None else "mcp-stdio"

    def screen(account_id: str):  # type: ignore[no-untyped-def]
        return screen_for(state.rate_limiter, state.settings, account_id)

    def tool(name: str, description: str, annotations: ToolAnnotations):  # type: ignore[no-untyped-def]
        def register(fn):  # type: ignore[no-untyped-def]
            server.tool(name=name, description=description, annotations=annotations)(reasoned(fn))
            return fn

        return register

    @tool(
        "register",
        "Open an account (free). The API key in the answer is shown once: keep it; it is "
        "the x-api-key of every other tool. accepted_terms must be true.",
        KEYED,
    )
    async def register(
        ctx: Context, accepted_terms: bool, idempotency_key: IdempotencyKeyArg | None = None
    ) -> Result:
        body = {"accepted_terms": accepted_terms}
        key = idempotency(app, idempotency_key, "POST /v1/account/register", {}, body)
        where = source(ctx)
        outcome = await in_transaction(
            app,
            lambda session: accounts.register_once(
                session,
                state.settings,
                state.rate_limiter,
                key,
                accepted_terms=accepted_terms,
                source=where,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(RegisterAccountResponse, outcome.body)

    @tool("get_account", "Your account: balance, reputation, setup still needed. Free.", READS)
    async def get_account(ctx: Context) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: accounts.account_view(session, caller.account, now=clock.now()),
        )
        return shaped(AccountOut, view, exclude_none=False)

    @tool("get_profile", "Your profile: contact, deal route, what is missing. Free.", READS)
    async def get_profile(ctx: Context) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: accounts.profile_view(session, caller.account, now=clock.now()),
        )
        return shaped(AccountProfileOut, view, exclude_none=False)

    @tool(
        "set_contact",
        "Set the operator contact revealed to your counterparty once a deal seals (never "
        "before). Free. Answers your profile.",
        SETS,
    )
    async def set_contact(
        ctx: Context, contact_name: str, contact_email: str, contact_url: str | None = None
    ) -> Result:
        request = parsed(
            ContactRequest,
            {
                "contact_name": contact_name,
                "contact_email": contact_email,
                "contact_url": contact_url,
            },
        )

        def work(session, caller):  # type: ignore[no-untyped-def]
            account = accounts.get(session, caller.account_id)
            accounts.set_contact(
                session,
                account,
                name=request.contact_name,
                email=request.contact_email,
                url=request.contact_url,
            )
            session.flush()
            return accounts.profile_view(
                session, accounts.record(session, caller.account_id), now=clock.now()
            )

        return shaped(
            AccountProfileOut,
            await as_caller(app, key_of(ctx), work, write=True),
            exclude_none=False,
        )

    @tool(
        "set_route",
        "Set your deal route (an https base your counterparty reaches after a seal), its "
        "protocol binding and agent card. Free. Answers your profile.",
        SETS,
    )
    async def set_route(
        ctx: Context,
        deal_route: str,
        route_protocol_binding: str | None = None,
        agent_card_url: str | None = None,
    ) -> Result:
        request = parsed(
            RouteRequest,
            {
                "deal_route": deal_route,
                "route_protocol_binding": route_protocol_binding,
                "agent_card_url": agent_card_url,
            },
        )

        def work(session, caller):  # type: ignore[no-untyped-def]
            accounts.set_route(
                session,
                state.settings,
                accounts.get(session, caller.account_id),
                deal_route=request.deal_route,
                binding=request.route_protocol_binding,
                agent_card_url=request.agent_card_url,
            )
            session.flush()
            return accounts.profile_view(
                session, accounts.record(session, caller.account_id), now=clock.now()
            )

        return shaped(
            AccountProfileOut,
            await as_caller(app, key_of(ctx), work, write=True),
            exclude_none=False,
        )

    @tool(
        "get_domain_challenge",
        "The file to serve on your deal route's domain to prove you control it (a one-time "
        "welcome credit). Free.",
        READS,
    )
    async def get_domain_challenge(ctx: Context) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: domains.challenge_view(session, state.settings, caller.account),
        )
        return shaped(DomainChallengeOut, view, exclude_none=False)

    @tool(
        "verify_domain",
        "Fetch the challenge file from your domain and, once proved, pay the welcome credit. "
        "Free; 10 an hour.",
        PROVES,
    )
    async def verify_domain(ctx: Context) -> Result:
        account = await account_of(app, key_of(ctx))
        view = await proof.verify(
            state.db, state.settings, state.outbound, state.rate_limiter, account
        )
        return shaped(DomainVerificationOut, view)

    @tool(
        "read_feed",
        "Live listings, newest first, 20 a page by default (cursor for the next). Free with a key.",
        READS,
    )
    async def read_feed(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100)] = listings.DEFAULT_FEED_LIMIT,
        cursor: Annotated[str | None, Field(max_length=512)] = None,
        category: Annotated[str | None, Field(max_length=100)] = None,
        listing_type: Literal["buy", "sell"] | None = None,
        q: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="Words all in title or body"),
        ] = None,
        sort: Literal["newest", "price_asc", "price_desc"] = "newest",
    ) -> Result:
        query = listings.FeedQuery(
            limit=limit,
            cursor=cursor,
            category=category,
            listing_type=listing_type,
            q=q,
            sort=sort,
        )
        page = await as_caller(
            app,
            key_of(ctx),
            lambda session, _caller: listings.feed(session, query, now=clock.now()),
        )
        return shaped(FeedPage, page)

    @tool("get_listing", "One listing with its body and the poster's standing. Free.", READS)
    async def get_listing(ctx: Context, listing_id: Id) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, _caller: listings.read(session, listing_id, now=clock.now()),
        )
        return shaped(ListingOut, view)

    @tool(
        "post_listing",
        "Post a buy or sell listing: 200 credits. Scanned for contact details (refused, "
        "nothing charged). Retry with the same idempotency_key.",
        KEYED,
    )
    async def post_listing(
        ctx: Context,
        title: str,
        category: str,
        listing_type: Literal["buy", "sell"],
        body: str,
        idempotency_key: IdempotencyKeyArg,
        price_micro: int | None = None,
        delivery_deadline_days: int | None = None,
    ) -> Result:
        fields = {
            "title": title,
            "category": category,
            "listing_type": listing_type,
            "body": body,
            "price_micro": price_micro,
            "delivery_deadline_days": delivery_deadline_days,
        }
        request = parsed(PostListingRequest, fields)
        sent = {k: v for k, v in fields.items() if v is not None}
        key = idempotency(app, idempotency_key, "POST /v1/listings", {}, sent)
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: listings.post_once(
                session,
                caller.account,
                request,
                key,
                screen=screen(caller.account_id),
                ttl=state.settings.listing_ttl,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ListingOut, outcome.body)

    @tool(
        "open_thread",
        "Open a negotiation on a listing with your proposed terms: holds 2,000 credits "
        "(the deal fee), released if no deal seals. Retry with the same idempotency_key.",
        KEYED,
    )
    async def open_thread(
        ctx: Context, listing_id: Id, diff: str, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        request = parsed(DiffRequest, {"diff": diff})
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/listings/{listing_id}/threads",
            {"listing_id": listing_id},
            {"diff": diff},
        )
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.open_thread_once(
                session,
                caller.account,
                listing_id,
                request.diff,
                key,
                screen=screen(caller.account_id),
                ttl=state.settings.thread_ttl,
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)

    @tool(
        "get_thread",
        "A negotiation you are in: terms, whose turn, the counterparty's standing. Free.",
        READS,
    )
    async def get_thread(ctx: Context, thread_id: Id) -> Result:
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.read(
                session, caller.account_id, thread_id, now=clock.now()
            ),
        )
        return shaped(ThreadRead, view)

    @tool(
        "make_offer",
        "Make an offer in your turn: the terms replace the running ones and the turn passes. "
        "Free. Not idempotent: read the thread before retrying.",
        ONCE,
    )
    async def make_offer(ctx: Context, thread_id: Id, diff: str) -> Result:
        request = parsed(DiffRequest, {"diff": diff})
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.offer(
                session,
                caller.account_id,
                thread_id,
                request.diff,
                screen=screen(caller.account_id),
                now=clock.now(),
            ),
            write=True,
        )
        return shaped(ThreadOut, view, exclude_none=False)

    @tool(
        "close_thread",
        "Close a negotiation without a deal (the opener's hold is released). Free.",
        FINAL,
    )
    async def close_thread(
        ctx: Context, thread_id: Id, idempotency_key: IdempotencyKeyArg
    ) -> Result:
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/threads/{thread_id}/close",
            {"thread_id": thread_id},
            None,
        )
        assert key is not None
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.close_once(
                session, caller.account_id, thread_id, key, now=clock.now()
            ),
            write=True,
        )
        return shaped(ThreadOut, outcome.body, exclude_none=False)

    @tool(
        "finalize",
        "Poster only: accept the counterparty's standing offer and seal the deal. Charges "
        "2,000 credits (the deal fee) to you and captures the opener's hold; both sides then "
        "see each other's contact and route. Retry with the same idempotency_key.",
        FINAL,
    )
    async def finalize(ctx: Context, thread_id: Id, idempotency_key: IdempotencyKeyArg) -> Result:
        key = idempotency(
            app,
            idempotency_key,
            "POST /v1/threads/{thread_id}/finalize",
            {"thread_id": thread_id},
            None,
        )
        assert key is not None
        signer = signer_of(app)
        outcome = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: threads.finalize_once(
                session, caller.account, thread_id, key, signer=signer, now=clock.now()
            ),
            write=True,
        )
        return shaped(DealPackage, outcome.body)

    @tool(
        "get_deal",
        "A sealed deal: the counterparty's contact, endpoint and the deal credential to "
        "present there. Free.",
        READS,
    )
    async def get_deal(ctx: Context, deal_id: Id) -> Result:
        signer = signer_of(app)
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: deals.read(
                session, caller.account_id, deal_id, signer=signer, now=clock.now()
            ),
        )
        return shaped(DealPackage, view)

    @tool("rate_deal", "Rate your counterparty in a deal, once (1-5). Free.", ONCE)
    async def rate_deal(
        ctx: Context, deal_id: Id, score: int, delivered: bool | None = None
    ) -> Result:
        request = parsed(RatingRequest, {"score": score, "delivered": delivered})
        await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: feedback.rate(
                session,
                caller.account_id,
                deal_id,
                score=request.score,
                delivered=request.delivered,
                now=clock.now(),
            ),
            write=True,
        )
        return {"rated": True, "deal_id": deal_id}

    @tool(
        "dispute_deal", "Dispute a deal, once. Free; it weighs on the counterparty's record.", FINAL
    )
    async def dispute_deal(ctx: Context, deal_id: Id) -> Result:
        await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: feedback.dispute(
                session, caller.account_id, deal_id, now=clock.now()
            ),
            write=True,
        )
        return {"disputed": True, "deal_id": deal_id}

    @tool(
        "lookup_reputation",
        "The public reputation record of a handle (no key needed). Free; 600 an hour.",
        READS,
    )
    async def lookup_reputation(ctx: Context, handle: Id) -> Result:
        where = source(ctx)
        view = await in_transaction(
            app,
            lambda session: records.lookup(
                session, handle, limiter=state.rate_limiter, source=where, now=clock.now()
            ),
        )
        return shaped(PublicReputation, view)

    @tool(
        "attest_reputation",
        "Sign your own reputation record: a statement (24 h), or with both nonce and "
        "audience a proof for that relying party (5 min, 120 an hour). Free.",
        ONCE,
    )
    async def attest_reputation(
        ctx: Context, nonce: str | None = None, audience: str | None = None
    ) -> Result:
        sent = {k: v for k, v in {"nonce": nonce, "audience": audience}.items() if v is not None}
        raw = attestation.RawBody(json.dumps(sent).encode() if sent else b"")
        signer = signer_of(app)
        view = await as_caller(
            app,
            key_of(ctx),
            lambda session, caller: attestation.attest(
                session, caller, raw, signer=signer, limiter=state.rate_limiter, now=clock.now()
            ),
        )
        return shaped(ReputationAttestation, view, exclude_none=False)

    @tool(
        "verify_ledger",
        "The ledger-integrity verdict (is the money journal unaltered?). No key needed. Free.",
        READS,
    )
    async def verify_ledger(ctx: Context) -> Result:
        served = await in_transaction(app, lambda session: verdict.serve(session, now=clock.now()))
        return {"status_code": served.status_code, **served.body}
