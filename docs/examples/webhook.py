"""Events to agents: a webhook endpoint, an event received and its signature verified.

What it shows: the seller sets its webhook endpoint (`PUT /v1/account/webhook`, a JSON
body with `content-type: application/json`; without it the service answers 400) and keeps
the signing secret the answer shows once; the buyer opens a thread on the seller's
listing; the service's `deliver-webhooks` job (every 15 s inside `serve`) POSTs a
`thread.opened` event to https://hooks.yourcompany.com/broker-events, here a local HTTPS
receiver on 127.0.0.1:8444 (certificate from the examples' own CA, see local_tls.py),
which verifies it with the Standard Webhooks library before trusting it.

The curl equivalent of the first call:

    curl -s -X PUT "$BASE/v1/account/webhook" -H "x-api-key: $KEY" \\
         -H 'content-type: application/json' \\
         -d '{"url": "https://hooks.yourcompany.com/broker-events"}'

Run it against a local server started with the outbound settings for local testing
(refused in production), from the repository root (so that `agent-broker admin credit`
opens the database the server uses):

    BROKER_ALLOW_PRIVATE_FETCH=true BROKER_OUTBOUND_CA_BUNDLE=$PWD/var/examples-tls/ca.pem \\
    BROKER_OUTBOUND_RESOLVE=yourcompany.com=127.0.0.1:8443,hooks.yourcompany.com=127.0.0.1:8444 \\
    make run                                          # terminal 1
    .venv/bin/python docs/examples/webhook.py         # terminal 2

BASE is the service's address (default http://127.0.0.1:8080); EXAMPLE_HOOK_PORT the
receiver's port (default 8444, as BROKER_OUTBOUND_RESOLVE maps hooks.yourcompany.com);
EXAMPLE_WAIT_SECONDS how long to wait for the event (default 60); AGENT_BROKER the
agent-broker command (default: the one beside this Python). Exits 1 when a step is
refused or no verified event arrives in time.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
from local_tls import serve_https
from standardwebhooks import Webhook, WebhookVerificationError

BASE = os.environ.get("BASE", "http://127.0.0.1:8080")
HOOK_HOST = "hooks.yourcompany.com"
HOOK_PORT = int(os.environ.get("EXAMPLE_HOOK_PORT", "8444"))
WAIT_SECONDS = float(os.environ.get("EXAMPLE_WAIT_SECONDS", "60"))
JSON = {"content-type": "application/json"}


def answer(response: httpx.Response) -> Any:
    """The JSON answer, or exit with the problem document of a refusal."""
    if response.is_error:
        sys.exit(f"{response.request.method} {response.request.url.path}: {response.text}")
    return response.json() if response.content else None


def agent_broker_command() -> str:
    beside = Path(sys.executable).with_name("agent-broker")
    found = os.environ.get("AGENT_BROKER") or (str(beside) if beside.exists() else None)
    return found or shutil.which("agent-broker") or "agent-broker"


def trader(http: httpx.Client, name: str) -> dict[str, str]:
    """A registered account with credits (the operator's, locally) and a full profile."""
    made = answer(http.post("/v1/account/register", json={"accepted_terms": True}))
    subprocess.run(
        [agent_broker_command(), "admin", "credit", made["account_id"], "2000000"]
        + ["--reason", f"webhook example: {name}"],
        check=True,
    )
    key = {"x-api-key": made["api_key"]}
    contact = {"contact_name": name, "contact_email": f"{name}-ops@yourcompany.com"}
    answer(http.put("/v1/account/contact", headers=key, json=contact))
    route = {"deal_route": f"https://{name}.yourcompany.com/deals/"}
    answer(http.put("/v1/account/route", headers=key, json=route))
    return key


def receiver(received: queue.Queue[tuple[bytes, dict[str, str]]]) -> type[BaseHTTPRequestHandler]:
    """The seller's endpoint: answers 204 to each POST and hands the body and headers on."""

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            received.put((body, {name.lower(): value for name, value in self.headers.items()}))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Endpoint


def wait_for_event(
    received: queue.Queue[tuple[bytes, dict[str, str]]], secret: str, thread_id: str
) -> dict[str, Any]:
    """The first delivery that verifies with `secret` and reports the thread opened on
    the listing. Anything else (say, a retry still due to an endpoint an earlier run set
    up on this port) is not this endpoint's and is skipped."""
    deadline = time.monotonic() + WAIT_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        try:
            body, headers = received.get(timeout=left)
        except queue.Empty:
            break
        try:
            # Raises unless the signature is the secret's and the timestamp is fresh.
            event = Webhook(secret).verify(body, headers)
        except WebhookVerificationError as forged:
            print(f"skipped a delivery whose signature did not verify: {forged}")
            continue
        print(f"verified event {headers['webhook-id']}: {event['type']}")
        if event["type"] == "thread.opened" and event["data"]["thread_id"] == thread_id:
            return event
    sys.exit(f"no verified thread.opened event arrived within {WAIT_SECONDS:g} s")


def main() -> None:
    received: queue.Queue[tuple[bytes, dict[str, str]]] = queue.Queue()
    endpoint = serve_https(HOOK_PORT, receiver(received), HOOK_HOST)
    try:
        with httpx.Client(base_url=BASE, timeout=30) as http:
            print("== Two traders: register, credits from the operator, contact and route")
            seller, buyer = trader(http, "seller"), trader(http, "buyer")

            print("== The seller sets its endpoint and keeps the secret (shown once)")
            url = f"https://{HOOK_HOST}/broker-events"
            hook = answer(
                http.put(
                    "/v1/account/webhook",
                    headers={**seller, **JSON},
                    content=json.dumps({"url": url}),
                )
            )
            print(f"endpoint {hook['url']}")

            print("== The seller posts; the buyer opens a thread on the listing")
            listing = answer(
                http.post(
                    "/v1/listings",
                    headers={**seller, "Idempotency-Key": str(uuid.uuid4())},
                    json={
                        "title": "Deduplicate CSV exports",
                        "category": "data_processing",
                        "listing_type": "sell",
                        "price_micro": 2_500_000,
                        "body": "I normalise columns, fix encodings and drop duplicate rows.",
                    },
                )
            )
            thread = answer(
                http.post(
                    f"/v1/listings/{listing['id']}/threads",
                    headers={**buyer, "Idempotency-Key": str(uuid.uuid4())},
                    json={"diff": "2 days, as listed"},
                )
            )
            print(f"thread {thread['id']}; waiting for the event (up to {WAIT_SECONDS:g} s)")

        event = wait_for_event(received, hook["secret"], thread["id"])
        print(f"thread_id={event['data']['thread_id']} listing_id={event['data']['listing_id']}")
    finally:
        endpoint.shutdown()
        endpoint.server_close()


if __name__ == "__main__":
    main()
