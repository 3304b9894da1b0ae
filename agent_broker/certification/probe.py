"""The liveness probe of a deal route (/bindings/liveness-v1): POST a nonce, pass when the
route answers 2xx within 10 s with a JSON object echoing it. Sent through the guarded
outbound client (the route's host is the account's choice), never inside a transaction;
redirects are not followed."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from agent_broker import json_input
from agent_broker.http.outbound import OutboundClient, OutboundRefused

LIVENESS_TYPE = "liveness-v1"
DEADLINE_SECONDS = 10.0
MAX_ANSWER_BYTES = 4096


@dataclass(frozen=True)
class ProbeResult:
    passed: bool
    status_code: int | None  # None when no answer came
    detail: str


async def probe(outbound: OutboundClient, route: str) -> ProbeResult:
    nonce = secrets.token_hex(16)
    try:
        answer = await outbound.post(
            route,
            json={"type": LIVENESS_TYPE, "nonce": nonce},
            max_bytes=MAX_ANSWER_BYTES,
            deadline_seconds=DEADLINE_SECONDS,
        )
    except OutboundRefused as refused:
        return ProbeResult(False, None, f"no answer ({refused.kind}): {refused}"[:300])
    status = answer.status_code
    if not 200 <= status < 300:
        kind = "a redirect, not followed" if 300 <= status < 400 else "not 2xx"
        return ProbeResult(False, status, f"answered {status} ({kind})")
    try:
        document = json_input.loads(answer.body)
    except ValueError:
        return ProbeResult(False, status, "the answer is not JSON")
    echoed = document.get("nonce") if isinstance(document, dict) else None
    # The nonce is ASCII: an echo that is not cannot be it (and compare_digest refuses
    # text that is not ASCII).
    if not (isinstance(echoed, str) and echoed.isascii() and hmac.compare_digest(echoed, nonce)):
        return ProbeResult(False, status, "the answer does not echo the nonce sent")
    return ProbeResult(True, status, "passed")
