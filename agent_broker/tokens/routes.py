from __future__ import annotations

from fastapi import Response

from agent_broker import clock
from agent_broker.db.dispatch import db_bound
from agent_broker.db.session import ReadSession
from agent_broker.http.routing import broker_router
from agent_broker.tokens import registry
from agent_broker.tokens.schemas import KeyDocument
from agent_broker.tokens.startup import lifespan

router = broker_router(tags=["meta"], lifespan=lifespan)

USAGE = (
    "Verify PASETO v4.public tokens issued by this service with the key whose kid matches "
    "the token footer's kid. A retired key stays listed for one token life "
    f"({registry.TOKEN_TTL.days} days); refetch when a token names an unknown kid."
)


@router.get("/.well-known/paseto-keys.json", response_model=KeyDocument)
@db_bound
def paseto_keys(response: Response, session: ReadSession) -> dict:
    """Public keys that verify this service's tokens (no authentication)."""
    # Short cache: a verifier meeting a new kid after a rotation refetches within minutes.
    response.headers["Cache-Control"] = "public, max-age=300"
    return {
        "keys": registry.published(session, now=clock.now()),
        "algorithm": "Ed25519",
        "token_ttl_seconds": int(registry.TOKEN_TTL.total_seconds()),
        "usage": USAGE,
    }
