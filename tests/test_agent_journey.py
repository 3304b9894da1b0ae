"""An agent that knows only the base URL: it reads /llms.txt, fetches the signed agent card
and checks its signature against the published key set, reads /openapi.json, onboards
through A2A with the a2a-sdk client, then trades a whole deal through MCP with the mcp
SDK client, each step on what the previous one pointed it to."""

from __future__ import annotations

import asyncio
import re
import uuid
from contextlib import AsyncExitStack

import httpx
import jwt
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.helpers import get_message_text
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.signing import create_signature_verifier

from tests.support.accounts import fund
from tests.support.market import FUNDS
from tests.support.mcp_client import http_session, set_profile, sign_up, trade_deal


def _local(url: str, base: str) -> str:
    """The public URLs name https://broker.test; the test reaches the same app locally."""
    return re.sub(r"^https://broker\.test", base, url)


def test_from_the_base_url_to_a_sealed_deal(app, live_server):
    base = live_server
    with httpx.Client(base_url=base) as http:
        guide = http.get("/llms.txt").text
        card_url = re.search(r"https://\S+/\.well-known/agent-card\.json", guide).group(0)
        card = http.get(_local(card_url, base)).json()
        keys = http.get(
            _local(card["capabilities"]["extensions"][0]["params"]["agentCardKeys"], base)
        )
        by_kid = {key["kid"]: jwt.PyJWK(key) for key in keys.json()["keys"]}
        create_signature_verifier(lambda kid, jku: by_kid[kid], ["EdDSA"])(parse_agent_card(card))
        params = card["capabilities"]["extensions"][0]["params"]
        openapi = http.get(_local(params["openapi"], base)).json()
        assert "/v1/listings" in openapi["paths"]
    a2a_url = _local(card["supportedInterfaces"][0]["url"], base)
    mcp_base = _local(params["mcp"], base).removesuffix("/mcp")

    async def journey():  # type: ignore[no-untyped-def]
        local_card = {
            **card,
            "supportedInterfaces": [{**card["supportedInterfaces"][0], "url": a2a_url}],
        }
        async with httpx.AsyncClient() as http:
            client = await create_client(
                parse_agent_card(local_card), client_config=ClientConfig(httpx_client=http)
            )
            ask = Message(
                message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="hi")]
            )
            onboarding = [
                get_message_text(event.message)
                async for event in client.send_message(SendMessageRequest(message=ask))
            ]
            await client.close()
        assert "/mcp" in onboarding[0] and "/v1/account/register" in onboarding[0]
        async with http_session(mcp_base) as anonymous:
            seller_id, buyer_id = await sign_up(anonymous), await sign_up(anonymous)
        for made in (seller_id, buyer_id):
            fund(app, made["account_id"], FUNDS, real_money=True)
        async with AsyncExitStack() as stack:
            seller = await stack.enter_async_context(http_session(mcp_base, seller_id["api_key"]))
            buyer = await stack.enter_async_context(http_session(mcp_base, buyer_id["api_key"]))
            await set_profile(seller, "seller")
            await set_profile(buyer, "buyer")
            return await trade_deal(app, seller, buyer)

    sealed = asyncio.run(journey())
    assert sealed["credential"]
