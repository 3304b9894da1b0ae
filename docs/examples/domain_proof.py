"""Domain proof and the welcome credit, against a local HTTPS site.

What it shows: a new agent sets a deal route on yourcompany.com, asks the service for its
domain challenge, serves the token as https://yourcompany.com/.well-known/svc-challenge.txt
(here from a local HTTPS server on 127.0.0.1:8443, with a certificate from the examples'
own CA, see local_tls.py), and proves the domain: the service fetches the file and pays
the one-time welcome credit ($10 by default) once per account and once per domain. A
later proof of the same domain by another account is recorded, without a second credit.

Run it against a local server started with the outbound settings for local testing
(refused in production), from the repository root:

    BROKER_ALLOW_PRIVATE_FETCH=true BROKER_OUTBOUND_CA_BUNDLE=$PWD/var/examples-tls/ca.pem \\
    BROKER_OUTBOUND_RESOLVE=yourcompany.com=127.0.0.1:8443,hooks.yourcompany.com=127.0.0.1:8444 \\
    make run                                              # terminal 1
    .venv/bin/python docs/examples/domain_proof.py        # terminal 2

BASE is the service's address (default http://127.0.0.1:8080); EXAMPLE_DOMAIN the domain
(default yourcompany.com) and EXAMPLE_CHALLENGE_PORT the local HTTPS port (default 8443),
as BROKER_OUTBOUND_RESOLVE maps them. Exits 1 when a step is refused or the proof fails.
"""

from __future__ import annotations

import os
import sys
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
from local_tls import serve_https

BASE = os.environ.get("BASE", "http://127.0.0.1:8080")
DOMAIN = os.environ.get("EXAMPLE_DOMAIN", "yourcompany.com")
PORT = int(os.environ.get("EXAMPLE_CHALLENGE_PORT", "8443"))
CHALLENGE_PATH = "/.well-known/svc-challenge.txt"


def answer(response: httpx.Response) -> Any:
    """The JSON answer, or exit with the problem document of a refusal."""
    if response.is_error:
        sys.exit(f"{response.request.method} {response.request.url.path}: {response.text}")
    return response.json() if response.content else None


def challenge_site(token: str) -> type[BaseHTTPRequestHandler]:
    """The domain's web server: the token as the whole body of the challenge path."""

    class Site(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            found = self.path == CHALLENGE_PATH
            body = (token + "\n").encode() if found else b"not found\n"
            self.send_response(200 if found else 404)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            print(f"the site answered: {format % args}")

    return Site


def main() -> None:
    with httpx.Client(base_url=BASE, timeout=30) as http:
        print("== Register and set a deal route on the domain")
        made = answer(http.post("/v1/account/register", json={"accepted_terms": True}))
        key = {"x-api-key": made["api_key"]}
        route = {"deal_route": f"https://agent.{DOMAIN}/deals/"}
        answer(http.put("/v1/account/route", headers=key, json=route))

        print("== Ask for the challenge")
        challenge = answer(http.get("/v1/account/domain", headers=key))
        print(f"serve {challenge['token']} at {challenge['url']}")

        site = serve_https(PORT, challenge_site(challenge["token"]), DOMAIN)
        try:
            print("== Prove it: the service fetches the file")
            proved = answer(http.post("/v1/account/domain/verify", headers=key))
        finally:
            site.shutdown()
            site.server_close()
        print(f"verified={proved['verified']} granted={proved['granted']}: {proved['detail']}")
        balance = answer(http.get("/v1/account", headers=key))["balance_micro"]
        print(f"balance_micro={balance}")
        if not proved["verified"]:
            sys.exit("the domain was not verified")


if __name__ == "__main__":
    main()
