"""Account tools: register, the account and profile, contact and route, domain proof."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts import service as accounts
from agent_broker.accounts.caller import Caller
from agent_broker.accounts.schemas import (
    AccountOut,
    AccountProfileOut,
    ContactRequest,
    RegisterAccountResponse,
    RouteRequest,
)
from agent_broker.domains import proof
from agent_broker.domains import service as domains
from agent_broker.domains.schemas import DomainChallengeOut, DomainVerificationOut
from agent_broker.mcp_tools.common import (
    KEYED,
    PROVES,
    READS,
    SETS,
    IdempotencyKeyArg,
    Result,
    Toolbox,
    shaped,
)
from agent_broker.mcp_tools.plumbing import (
    account_of,
    as_caller,
    idempotency,
    in_transaction,
    parsed,
)
from agent_broker.membership import service as membership


def register_account_tools(box: Toolbox) -> None:
    context, tool, key_of = box.context, box.tool, box.key_of

    async def profile_after(ctx: Context, change: Callable[[Session, Any], None]) -> Result:
        """Apply a change to the caller's account and answer its profile (REST answers
        204; a tool answers what it changed)."""

        def work(session: Session, caller: Caller) -> dict:
            change(session, accounts.get(session, caller.account_id))
            session.flush()
            changed = accounts.record(session, caller.account_id)
            return accounts.profile_view(session, changed, now=clock.now())

        view = await as_caller(context, key_of(ctx), work, write=True)
        return shaped(AccountProfileOut, view, exclude_none=False)

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
        key = idempotency(context, idempotency_key, "POST /v1/account/register", {}, body)
        where = box.source(ctx)
        outcome = await in_transaction(
            context,
            lambda session: membership.register_once(
                session,
                context.settings,
                context.rate_limiter,
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
            context,
            key_of(ctx),
            lambda session, caller: membership.account_view(
                session, caller.account, now=clock.now()
            ),
        )
        return shaped(AccountOut, view, exclude_none=False)

    @tool("get_profile", "Your profile: contact, deal route, what is missing. Free.", READS)
    async def get_profile(ctx: Context) -> Result:
        view = await as_caller(
            context,
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

        return await profile_after(
            ctx,
            lambda session, account: accounts.set_contact(
                session,
                account,
                name=request.contact_name,
                email=request.contact_email,
                url=request.contact_url,
            ),
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

        return await profile_after(
            ctx,
            lambda session, account: membership.set_route(
                session,
                context.settings,
                account,
                deal_route=request.deal_route,
                binding=request.route_protocol_binding,
                agent_card_url=request.agent_card_url,
            ),
        )

    @tool(
        "get_domain_challenge",
        "The file to serve on your deal route's domain to prove you control it (a one-time "
        "welcome credit). Free.",
        READS,
    )
    async def get_domain_challenge(ctx: Context) -> Result:
        view = await as_caller(
            context,
            key_of(ctx),
            lambda session, caller: domains.challenge_view(
                session, context.settings, caller.account
            ),
        )
        return shaped(DomainChallengeOut, view, exclude_none=False)

    @tool(
        "verify_domain",
        "Fetch the challenge file from your domain and, once proved, pay the welcome credit. "
        "Free; 10 an hour.",
        PROVES,
    )
    async def verify_domain(ctx: Context) -> Result:
        account = await account_of(context, key_of(ctx))
        view = await proof.verify(
            context.db, context.settings, context.outbound, context.rate_limiter, account
        )
        return shaped(DomainVerificationOut, view)
