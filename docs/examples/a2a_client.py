"""A2A with the official a2a-sdk: verify the agent card's signature, then send a message.

What it shows: the card at /.well-known/agent-card.json is signed (detached JWS, EdDSA)
over A2A's canonical form of the card, and an A2A client verifies it as it would any card,
with the key from /.well-known/jwks.json named by the signature's `kid`; then the SDK's
client, built from the same card, sends `SendMessage` (A2A 1.0 over JSON-RPC) and prints
the onboarding guide the service answers with. No key is needed.

Run it against a local server:

    make run                                        # terminal 1
    .venv/bin/python docs/examples/a2a_client.py    # terminal 2

BASE is the service's address (default http://127.0.0.1:8080). Exits 1 when the
signature does not verify or a request fails.
"""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import jwt
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.helpers import get_message_text
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.signing import create_signature_verifier

BASE = os.environ.get("BASE", "http://127.0.0.1:8080")


def verify_card() -> None:
    """Raises unless the card's signature verifies with the service's published key."""
    card = httpx.get(f"{BASE}/.well-known/agent-card.json").raise_for_status().json()
    published = httpx.get(f"{BASE}/.well-known/jwks.json").raise_for_status().json()
    keys = {key["kid"]: jwt.PyJWK(key) for key in published["keys"]}
    create_signature_verifier(lambda kid, jku: keys[kid], ["EdDSA"])(parse_agent_card(card))
    print(f"the card of {card['name']} {card['version']} verifies with key {sorted(keys)}")


async def onboard() -> str:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(BASE, client_config=ClientConfig(httpx_client=http))
        ask = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="hi")])
        async for event in client.send_message(SendMessageRequest(message=ask)):
            return get_message_text(event.message)
    raise SystemExit("the service sent no answer")


if __name__ == "__main__":
    verify_card()
    guide = asyncio.run(onboard())
    print("the A2A answer begins:")
    print("\n".join(guide.splitlines()[:8]))
