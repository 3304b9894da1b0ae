"""The evaluator's ruling as a token anyone can check against the service's published key
document: PASETO v4.public, type svc.ruling.v1 (docs/interface.md §11.4)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from agent_broker.tokens.keys import Signer
from agent_broker.tokens.service import mint

RULING_TYP = "svc.ruling.v1"
# As long as the key document keeps publishing a retired key (agent_broker.tokens.registry):
# a ruling is checkable for its whole life; the deal keeps the ruling itself after that.
RULING_TTL = timedelta(days=7)
OPERATOR = "operator"


def reason_digest(reason: str) -> str:
    return hashlib.sha256(reason.encode("utf-8")).hexdigest()


def mint_ruling(
    signer: Signer,
    *,
    deal_id: str,
    outcome: str,
    seller_share_bps: int,
    reason: str,
    evaluator: str | None,
    now: datetime,
) -> str:
    claims = {
        "typ": RULING_TYP,
        "deal_id": deal_id,
        "outcome": outcome,
        "seller_share_bps": seller_share_bps,
        "buyer_share_bps": 10_000 - seller_share_bps,
        "reason_sha256": reason_digest(reason),
        "evaluator": evaluator or OPERATOR,
    }
    return mint(signer, claims, RULING_TTL, now).token
