"""Every response the service really gives matches /openapi.json: a trading scenario runs
through the app (two traders, profiles, funding, listings, feed, a negotiation, finalize,
the deal, rating, dispute, reputation, attestations, the meta routes, the ledger verdict
and the usual refusals), and each answer is checked against the schema the served
document declares for its operation, status and media type, with the declared string
formats (date-time, uuid, email, uri) enforced. A status the document does not declare
for the operation fails, and so does a route of the app the scenario never answered
successfully."""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from datetime import date, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from email_validator import EmailNotValidError, validate_email
from eth_account.messages import encode_defunct
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from agent_broker import clock
from agent_broker.accounts.service import protocol_bindings
from agent_broker.categories import CATEGORIES
from agent_broker.meta.api_docs import ASSETS, ASSETS_PATH
from tests.support.accounts import Agent, complete_profile, fund
from tests.support.domains import echoing, serve_token
from tests.support.http import new_key
from tests.support.ledger import seal_now, store_verdict
from tests.support.market import LISTING
from tests.support.payments import SOURCE, WEBHOOK_SECRET
from tests.support.processors import processor_a_callback, processor_b_callback
from tests.support.x402_wallet import Wallet, pay_v1

DOCUMENT_URI = "urn:agent-broker:openapi"
# Routes of the app deliberately absent from the document (none today). A new route must
# either be documented and exercised by the scenario below, or be listed here with why.
UNDOCUMENTED: set[tuple[str, str]] = {
    # The card's icon: an image, not part of the interface.
    ("GET", "/icon.svg"),
    # The public HTML pages (tests/market).
    ("GET", "/market"),
    ("GET", "/market/{handle}"),
    # The API pages over the document, and their assets (tests/meta/test_api_docs.py).
    ("GET", "/docs"),
    ("GET", "/docs/oauth2-redirect"),
    ("GET", "/redoc"),
    *(("GET", f"{ASSETS_PATH}/{name}") for name in ASSETS),
    # A2A 0.3 surfaces, answered 501 so an old client learns why (tests/meta/test_discovery).
    *(
        (method, path)
        for path in (
            "/.well-known/agent.json",
            "/v1/message:send",
            "/v1/message:stream",
            "/v1/card",
            "/v1/tasks/{rest}",
        )
        for method in ("GET", "POST")
    ),
}

# --- string formats ------------------------------------------------------------------------

formats = FormatChecker(formats=())
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


@formats.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    datetime.fromisoformat(value)
    return _RFC3339.fullmatch(value) is not None


@formats.checks("date", raises=ValueError)
def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    date.fromisoformat(value)
    return _DAY.fullmatch(value) is not None


@formats.checks("uuid", raises=ValueError)
def _is_uuid(value: object) -> bool:
    return not isinstance(value, str) or str(uuid.UUID(value)) == value


@formats.checks("email", raises=EmailNotValidError)
def _is_email(value: object) -> bool:
    if isinstance(value, str):
        validate_email(value, check_deliverability=False)
    return True


@formats.checks("uri", raises=ValueError)
def _is_uri(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    if not _SCHEME.fullmatch(parts.scheme) or any(c.isspace() for c in value):
        return False
    return parts.scheme not in ("http", "https") or bool(parts.hostname)


@formats.checks("uri-reference", raises=ValueError)
def _is_uri_reference(value: object) -> bool:
    if not isinstance(value, str):
        return True
    urlsplit(value)
    return not any(c.isspace() for c in value)


# --- the document as a validator -----------------------------------------------------------


def _pointer(*parts: str) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


class Documented:
    """Checks responses against the served document and records what was answered."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        resource = Resource.from_contents(doc, default_specification=DRAFT202012)
        self.registry = Registry().with_resource(DOCUMENT_URI, resource)
        # Literal paths before templated ones, so /v1/threads/mine is not a thread id.
        self.templates = sorted(
            (
                (
                    template,
                    re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"),
                )
                for template in doc["paths"]
            ),
            key=lambda item: item[0].count("{"),
        )
        self.answered: dict[tuple[str, str], set[int]] = defaultdict(set)

    def operation_of(self, method: str, url: str) -> str:
        path = urlsplit(url).path
        for template, pattern in self.templates:
            if pattern.match(path) and method.lower() in self.doc["paths"][template]:
                return template
        raise AssertionError(f"{method} {path} is not an operation of the document")

    def check(self, response: httpx.Response) -> httpx.Response:
        method = response.request.method
        template = self.operation_of(method, str(response.request.url))
        operation = self.doc["paths"][template][method.lower()]
        status = str(response.status_code)
        where = f"{method} {template} {status}"
        assert status in operation["responses"], f"{where}: status not declared ({response.text})"
        content = operation["responses"][status].get("content")
        if not response.content:
            assert not content, f"{where}: declares a body, answered none"
        else:
            assert content, f"{where}: declares no body, answered {response.text}"
            media = response.headers["content-type"].split(";")[0].strip()
            assert media in content, f"{where}: {media} not declared ({sorted(content)})"
            pointer = _pointer("paths", template, method.lower(), "responses", status)
            pointer += _pointer("content", media, "schema")
            validator = Draft202012Validator(
                {"$ref": f"{DOCUMENT_URI}#{pointer}"},
                registry=self.registry,
                format_checker=formats,
            )
            if media == "text/event-stream":  # each message's fields, against the schema
                documents = _stream_messages(response.text)
            else:
                documents = [response.json() if media.endswith("json") else response.text]
            errors = sorted(
                (error for document in documents for error in validator.iter_errors(document)),
                key=lambda e: e.json_path,
            )
            assert not errors, f"{where}: " + "; ".join(
                f"{e.json_path}: {e.message}" for e in errors
            )
        self.answered[(method, template)].add(response.status_code)
        return response


class Api:
    """The test client, each answer checked against the document."""

    def __init__(self, client: TestClient, documented: Documented) -> None:
        self.client, self.documented = client, documented

    def request(
        self, method: str, url: str, expect: int, agent: Agent | None = None, **kwargs: Any
    ) -> httpx.Response:
        headers = {**(agent.headers if agent else {}), **kwargs.pop("headers", {})}
        response = self.client.request(method, url, headers=headers, **kwargs)
        assert response.status_code == expect, f"{method} {url}: {response.text}"
        return self.documented.check(response)

    def get(self, url: str, expect: int = 200, agent: Agent | None = None, **kw: Any):
        return self.request("GET", url, expect, agent, **kw)

    def post(self, url: str, expect: int, agent: Agent | None = None, **kw: Any):
        return self.request("POST", url, expect, agent, **kw)

    def put(self, url: str, expect: int, agent: Agent | None = None, **kw: Any):
        return self.request("PUT", url, expect, agent, **kw)

    def post_once(self, url: str, expect: int, agent: Agent | None, **kw: Any) -> httpx.Response:
        return self.post(url, expect, agent, headers={"Idempotency-Key": new_key()}, **kw)

    def register(self) -> Agent:
        body = self.post("/v1/account/register", 201, json={"accepted_terms": True}).json()
        return Agent(account_id=body["account_id"], api_key=body["api_key"])


def _stream_messages(text: str) -> list[dict[str, Any]]:
    """The messages of an event stream as objects of their fields (comments left out)."""
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.splitlines():
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                fields[name] = int(value) if name == "retry" else value
        if fields:
            messages.append(fields)
    for message in messages:
        if "data" in message:  # the webhook body
            assert set(json.loads(message["data"])) == {"type", "timestamp", "data"}
    return messages


def _api_routes(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of every API route the app serves, whether documented or not."""
    return {
        (method, context.path_format)
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, APIRoute)
        for method in context.methods or ()
        if method != "HEAD"
    }


SELL = LISTING
BUY = {
    "title": "Need a quick summary of three reports",
    "category": "summarization",
    "listing_type": "buy",
    "price_micro": 0,
    "body": "Three short reports to summarise, one paragraph each.",
}
NONCE = "0123456789abcdef0123456789abcdef"


def _signed_in(api: Api, payer: Wallet) -> dict[str, str]:
    """A wallet recovery's body: the service's sign-in message, signed by the wallet."""
    asked = api.post("/v1/account/wallet/challenge", 200, json={"address": payer.address})
    message = asked.json()["message"]
    signed = payer.account.sign_message(encode_defunct(text=message))
    return {"message": message, "signature": "0x" + bytes(signed.signature).hex()}


@pytest.fixture
def app(make_app, outbound_settings, payment_settings, x402_settings):
    # The domain proof reaches a local server; the processors and the x402 facilitator
    # are local fakes.
    return make_app(
        **outbound_settings,
        **payment_settings,
        **x402_settings,
        security_contact="mailto:security@broker.test",
        event_stream_seconds=0.5,  # so the stream's answer ends
    )


@pytest.fixture
def client(app):  # processor_b's callbacks are believed from 127.0.0.1 only
    with TestClient(app, raise_server_exceptions=False, client=SOURCE) as test_client:
        yield test_client


def test_every_response_matches_the_document(
    app: FastAPI,
    client: TestClient,
    challenge_server,
) -> None:
    doc = client.get("/openapi.json").json()
    documented = Documented(doc)
    api = Api(client, documented)

    # Meta and discovery, no key.
    api.get("/health")
    api.get("/version")
    api.get("/status.json")
    api.get("/stats.json")
    api.get("/.well-known/paseto-keys.json")
    api.get("/.well-known/agent-card.json")
    api.get("/.well-known/jwks.json")
    api.get("/.well-known/security.txt")
    api.get("/llms.txt")
    api.get("/llms-full.txt")
    api.get("/robots.txt")
    api.get("/a2a/health")
    api.get("/v1/ledger/verify", 404)
    # A2A over JSON-RPC: a result, and errors (still HTTP 200) for another version, an
    # unreadable body and a request the SDK refuses.
    ask = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    v1 = {"A2A-Version": "1.0"}
    assert "message" in api.post("/a2a", 200, json=ask, headers=v1).json()["result"]
    assert api.post("/a2a", 200, json=ask).json()["error"]["code"] == -32009
    assert api.post("/a2a", 200, content=b"{", headers=v1).json()["id"] is None
    assert api.post("/a2a", 200, json=[ask], headers=v1).json()["error"]["code"] == -32600

    # Registration: created, replayed, refused.
    key = new_key()
    created = api.post(
        "/v1/account/register", 201, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
    ).json()
    replay = api.post(
        "/v1/account/register", 200, json={"accepted_terms": True}, headers={"Idempotency-Key": key}
    ).json()
    assert replay == {"account_id": created["account_id"], "existing": True}
    api.post("/v1/account/register", 428, json={"accepted_terms": False})
    api.post(
        "/v1/account/register",
        400,
        content=b'{"accepted_terms": tru',
        headers={"content-type": "application/json"},
    )

    poster, opener, rival = api.register(), api.register(), api.register()
    api.get("/v1/account", 401)
    api.get("/v1/account", 401, headers={"x-api-key": "not-a-key"})

    # The profile before anything is set: contact, route, binding and card are null.
    profile = api.get("/v1/account/profile", agent=poster).json()
    assert profile["contact"] is None and profile["deal_route"] is None
    api.put(
        "/v1/account/contact",
        204,
        poster,
        json={"contact_name": "Ops Team", "contact_email": "ops@agents.dev"},
    )
    # A contact without its optional URL omits the URL rather than send null.
    profile = api.get("/v1/account/profile", agent=poster).json()
    assert profile["contact"] == {"contact_name": "Ops Team", "contact_email": "ops@agents.dev"}
    api.put(
        "/v1/account/contact",
        400,
        poster,
        json={"contact_name": "Ops", "contact_email": "ops@example.invalid"},
    )
    webhook = f"{app.state.context.settings.effective_bindings_base}/webhook-v1"
    api.put(
        "/v1/account/route",
        204,
        poster,
        json={
            "deal_route": "https://poster.agents.dev/deals/",
            "route_protocol_binding": webhook,
            "agent_card_url": "https://poster.agents.dev/.well-known/agent-card.json",
        },
    )
    api.put(
        "/v1/account/route",
        400,
        poster,
        json={"deal_route": "https://agents.dev/d/", "route_protocol_binding": "gRPC"},
    )
    profile = api.get("/v1/account/profile", agent=poster).json()
    assert profile["route_protocol_binding"] == webhook and profile["missing"] == []

    # Webhooks: set (the secret once), refused, removed.
    hook = api.request(
        "PUT", "/v1/account/webhook", 200, poster, json={"url": "https://agents.dev/events"}
    ).json()
    assert hook["secret"].startswith("whsec_")
    api.request("PUT", "/v1/account/webhook", 400, poster, json={"url": "http://agents.dev/x"})
    api.request("DELETE", "/v1/account/webhook", 204, poster)

    # Domain proof (an agent of its own, whose grant changes no balance below): the
    # challenge, a failed proof, the proof and its grant.
    prover = api.register()
    api.get("/v1/account/domain", 409, prover)
    api.put("/v1/account/route", 204, prover, json={"deal_route": "https://third.dev/d/"})
    domain_challenge = api.get("/v1/account/domain", agent=prover).json()
    api.post("/v1/account/domain/verify", 400, prover)
    serve_token(challenge_server, domain_challenge["token"])
    assert api.post("/v1/account/domain/verify", 200, prover).json()["granted"] is True

    # Certification: the liveness contract, the empty record, a free test that fails (the
    # route answers 404) and one that passes, then the record.
    api.get("/bindings/liveness-v1")
    api.get("/bindings/webhook-v1")
    api.get("/v1/account/certification", agent=prover)
    api.post("/v1/account/certification/test", 409, poster)
    assert api.post("/v1/account/certification/test", 200, prover).json()["last_test"]
    challenge_server.answer_with("/d/", echoing)
    tested = api.post("/v1/account/certification/test", 200, prover).json()
    assert tested["last_test"]["passed"] is True
    assert len(api.get("/v1/account/certification", agent=prover).json()["recent"]) == 2
    # Subscribing: unfunded (the grant is not real money), then subscribed; canceled.
    api.post_once("/v1/account/certification", 409, prover)
    api.post("/v1/account/certification", 400, prover)  # no Idempotency-Key
    fund(app, prover.account_id, 1, real_money=True)
    api.post_once("/v1/account/certification", 200, prover)
    assert api.post("/v1/account/certification/cancel", 200, prover).json()["renew"] is False

    # Buying credits: an invoice from each processor, their callbacks, the pay page.
    charge = api.post(
        "/dashboard/credits", 201, prover, json={"pack_count": 2, "processor": "processor_a"}
    ).json()
    body, signed = processor_a_callback(WEBHOOK_SECRET, charge["processor_id"])
    api.post("/webhooks/processor-a", 200, content=body, headers=signed)
    api.post("/webhooks/processor-a", 409, content=body, headers=signed)
    api.post("/webhooks/processor-a", 401, content=body, headers={"X-Webhook-Signature": "00"})
    api.post("/dashboard/credits", 400, prover, json={"pack_count": 11, "processor": "processor_a"})
    api.post("/dashboard/credits", 401, json={"pack_count": 1, "processor": "processor_a"})
    deposit = api.post(
        "/dashboard/credits", 201, prover, json={"pack_count": 3, "processor": "processor_b"}
    ).json()
    api.get(f"/dashboard/pay/{deposit['processor_id']}")
    api.get("/dashboard/pay/0xunknown", 404)
    payment = processor_b_callback(deposit["processor_id"], "payment-1", "1.5")
    assert api.post("/webhooks/processor-b", 200, data=payment).text == "*ok*"
    api.post("/webhooks/processor-b", 404, data=processor_b_callback("0xnone", "p", "1"))
    api.put(
        "/v1/account/contact",
        204,
        opener,
        json={
            "contact_name": "Buyer Ops",
            "contact_email": "buyer@agents.dev",
            "contact_url": "https://buyer.agents.dev/contact",
        },
    )
    api.put(
        "/v1/account/route",
        204,
        opener,
        json={"deal_route": "https://buyer.agents.dev/d", "route_protocol_binding": "JSONRPC"},
    )
    complete_profile(client, rival)
    api.get("/v1/account/profile", agent=opener)

    # Listings: refused before funding, posted after, read, and in the feed.
    api.post_once("/v1/listings", 402, poster, json=SELL)
    fund(app, poster.account_id, 20_000_000, real_money=True)
    fund(app, opener.account_id, 5_000_000, real_money=True)
    api.post("/v1/listings", 400, poster, json=SELL)  # no Idempotency-Key
    # No credential at all: the x402 challenge; paid, a new account posts.
    challenge = api.post_once("/v1/listings", 402, None, json=SELL).json()
    payer = Wallet()
    payment = pay_v1(payer, challenge["accepts"][2])
    paid = api.post(
        "/v1/listings",
        201,
        json=SELL,
        headers={"X-PAYMENT": payment, "Idempotency-Key": new_key()},
    )
    assert paid.json()["new_account"]["api_key"]
    api.get("/.well-known/x402")
    # The paying wallet recovers its account's key, which then lists and removes a link.
    recovery = _signed_in(api, payer)
    payer_agent = Agent(**api.post("/v1/account/wallet/recover", 200, json=recovery).json())
    api.post("/v1/account/wallet/recover", 400, json=recovery)
    api.post("/v1/account/wallet/recover", 404, json=_signed_in(api, Wallet()))
    api.post("/v1/account/wallet/challenge", 400, json={"address": "0x1"})
    (link,) = api.get("/dashboard/identities", agent=payer_agent).json()["identities"]
    api.request("DELETE", f"/dashboard/identities/{uuid.uuid4()}", 404, payer_agent)
    api.request("DELETE", f"/dashboard/identities/{link['id']}", 204, payer_agent)
    leak = {**SELL, "body": "Reach me at ops@agents.dev before we start."}
    api.post_once("/v1/listings", 422, poster, json=leak)
    listing = api.post_once("/v1/listings", 201, poster, json=SELL).json()
    free = api.post_once("/v1/listings", 201, poster, json=BUY).json()
    assert free["category"] == "free" and free["category"] in CATEGORIES
    api.get(f"/v1/listings/{listing['id']}", agent=opener)
    api.get(f"/v1/listings/{uuid.uuid4()}", 404, opener)
    page = api.get("/v1/feed?limit=1", agent=opener).json()
    assert "next_cursor" in page
    api.get(f"/v1/feed?cursor={quote(page['next_cursor'])}", agent=opener)
    api.get("/v1/feed?type=sell&category=data_processing", agent=opener)
    api.get("/v1/feed?limit=abc", 400, opener)
    api.get("/v1/listings/mine", agent=poster)
    api.get("/v1/account", agent=poster)

    # Threads: refusals first, then a negotiation.
    threads = f"/v1/listings/{listing['id']}/threads"
    api.post_once(threads, 409, poster, json={"diff": "my own listing"})
    api.post_once(threads, 402, rival, json={"diff": "no credit yet"})
    stranger = api.register()
    api.post_once(threads, 428, stranger, json={"diff": "no profile yet"})
    api.post_once(f"/v1/listings/{uuid.uuid4()}/threads", 404, opener, json={"diff": "gone"})
    fund(app, rival.account_id, 2_000_000, real_money=False)
    thread = api.post_once(threads, 201, opener, json={"diff": "Two days, $2.50"}).json()
    competitor = api.post_once(threads, 201, rival, json={"diff": "One day, $3"}).json()
    api.post(f"/v1/threads/{thread['id']}/offers", 200, poster, json={"diff": "Three days?"})
    api.post(f"/v1/threads/{thread['id']}/offers", 409, poster, json={"diff": "Again"})
    api.post(f"/v1/threads/{thread['id']}/offers", 200, opener, json={"diff": "Agreed"})
    api.get(f"/v1/threads/{thread['id']}", agent=opener)
    api.get(f"/v1/threads/{uuid.uuid4()}", 404, opener)
    inbox = api.get(threads, agent=poster).json()
    assert {t["id"] for t in inbox} == {thread["id"], competitor["id"]}
    api.get(threads, 403, opener)
    api.get("/v1/threads/mine", agent=opener)
    closing = {"Idempotency-Key": new_key()}
    api.post(f"/v1/threads/{competitor['id']}/close", 200, rival, headers=closing)
    api.post(f"/v1/threads/{competitor['id']}/close", 200, rival, headers=closing)

    # Finalize: only the poster; a replay answers the same package.
    finalize = f"/v1/threads/{thread['id']}/finalize"
    api.post_once(finalize, 403, opener)
    sealing = {"Idempotency-Key": new_key()}
    deal = api.post(finalize, 201, poster, headers=sealing).json()
    assert api.post(finalize, 201, poster, headers=sealing).json() == deal
    api.post_once(finalize, 409, poster)
    reveal = deal["reveal"]
    assert reveal["counterparty_contact"]["contact_url"] == "https://buyer.agents.dev/contact"
    assert reveal["counterparty_interface"]["protocolBinding"] == "JSONRPC"
    mirrored = api.get(f"/v1/deals/{deal['id']}", agent=opener).json()["reveal"]
    assert mirrored["counterparty_interface"]["protocolBinding"] == webhook
    assert set(mirrored["counterparty_contact"]) == {"contact_name", "contact_email"}
    api.get(f"/v1/deals/{deal['id']}", 404, rival)
    api.get(f"/v1/deals/{uuid.uuid4()}", 404, poster)
    api.get(f"/v1/threads/{thread['id']}", agent=poster)
    api.get("/v1/threads/mine", agent=poster)
    mine = api.get("/v1/listings/mine", agent=poster).json()["listings"]
    assert {"matched", "live"} == {listing["status"] for listing in mine}

    # Feedback.
    ratings = f"/v1/deals/{deal['id']}/ratings"
    api.post(ratings, 201, opener, json={"score": 5, "delivered": True})
    api.post(ratings, 409, opener, json={"score": 4})
    api.post(ratings, 400, poster, json={"score": 9})
    api.post(f"/v1/deals/{deal['id']}/dispute", 201, poster)
    api.post(f"/v1/deals/{deal['id']}/dispute", 409, poster)
    api.post(f"/v1/deals/{deal['id']}/dispute", 403, rival)

    # Reputation: public records, statement and proof.
    handle = api.get("/v1/account", agent=poster).json()["handle"]
    # The account's events: a page, a refused cursor, and a stream that ends.
    assert api.get("/v1/events?wait=10", agent=poster).json()["events"]
    api.get("/v1/events?after=msg_unknown", 400, agent=poster)
    assert api.get("/v1/events/stream", agent=poster).text.startswith(": events")
    api.get("/v1/events/stream", 400, agent=poster, headers={"Last-Event-ID": "msg_unknown"})
    api.get(f"/v1/reputation/{handle}")
    api.get(f"/v1/reputation/{api.get('/v1/account', agent=stranger).json()['handle']}")
    api.get("/v1/reputation/000000000000", 404)
    attestation = "/v1/account/reputation/attestation"
    api.post(attestation, 200, poster)
    proof = {"nonce": NONCE, "audience": "https://relying-party.example"}
    api.post(attestation, 200, opener, json=proof)
    api.post(attestation, 400, opener, json={"nonce": NONCE})
    api.post(attestation, 401)

    # The dashboard: a key rotated (the old one refused at once), then disabled.
    rotated = api.post("/dashboard/keys/rotate", 200, stranger).json()
    api.get("/v1/account", 401, stranger)
    stranger = Agent(account_id=stranger.account_id, api_key=rotated["api_key"])
    assert api.post("/dashboard/keys", 200, stranger).json() == {"ok": True}
    api.get("/v1/account", 403, stranger)
    api.post("/dashboard/keys/rotate", 403, stranger)

    # The ledger verdict once sealed, then unreadable.
    seal_now(app)
    api.get("/v1/ledger/verify")
    api.get("/health")
    api.get("/stats.json")
    api.get("/status.json")
    store_verdict(app, "{not json")
    api.get("/v1/ledger/verify", 503)

    # Escrow deals: one delivered and accepted, one delivered, rejected and ruled on.
    evaluator = api.register()
    evaluator_handle = api.get("/v1/account", agent=evaluator).json()["handle"]
    escrow_listing = {**SELL, "settlement": "escrow", "evaluator": evaluator_handle}
    fund(app, opener.account_id, 10_000_000, real_money=True)
    for ending in ("acceptance", "ruling"):
        posted = api.post_once("/v1/listings", 201, poster, json=escrow_listing).json()
        opening = {"diff": "As listed", "price_micro": SELL["price_micro"]}
        opened = api.post_once(f"/v1/listings/{posted['id']}/threads", 201, opener, json=opening)
        held = api.post_once(f"/v1/threads/{opened.json()['id']}/finalize", 201, poster).json()
        steps = f"/v1/deals/{held['id']}"
        api.post_once(f"{steps}/acceptance", 409, opener)
        delivery = {"note": "Done", "evidence_sha256": "ab" * 32}
        api.post_once(f"{steps}/delivery", 200, poster, json=delivery)
        if ending == "acceptance":
            api.post_once(f"{steps}/acceptance", 200, opener)
            continue
        api.post_once(f"{steps}/rejection", 200, opener, json={"reason": "Rows missing"})
        api.get(steps, agent=evaluator)
        refund = {"outcome": "refund", "reason": "Not delivered"}
        api.post_once(f"{steps}/ruling", 403, opener, json=refund)
        split = {"outcome": "split", "seller_share_bps": 5_000, "reason": "Half delivered"}
        api.post_once(f"{steps}/ruling", 200, evaluator, json=split)

    # Past purge_at the deal is gone.
    clock.advance(timedelta(days=8))
    api.get(f"/v1/deals/{deal['id']}", 410, poster)
    api.post(ratings, 410, poster, json={"score": 5})

    # Every route of the app is documented, and each answered successfully here.
    routes = _api_routes(app) - UNDOCUMENTED
    assert len(routes) >= 26
    in_document = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert routes == in_document
    unanswered = sorted(
        f"{method} {path}"
        for method, path in routes
        if not any(200 <= s < 300 for s in documented.answered[(method, path)])
    )
    assert not unanswered, unanswered


def test_the_format_checks_refuse_what_they_should(client: TestClient) -> None:
    validator = Draft202012Validator(
        {
            "type": "object",
            "properties": {
                name: {"type": "string", "format": name}
                for name in ("date-time", "uuid", "email", "uri", "date")
            },
        },
        format_checker=formats,
    )
    good = {
        "date-time": "2026-05-01T12:00:00Z",
        "uuid": str(uuid.uuid4()),
        "email": "ops@agents.dev",
        "uri": "https://agents.dev/d/8f2a",
        "date": "2026-05-01",
    }
    validator.validate(good)
    for name, bad in (
        ("date-time", "2026-05-01 12:00"),
        ("date-time", "2026-05-01T12:00:00"),
        ("uuid", "8f2a1c"),
        ("uuid", str(uuid.uuid4()).upper()),
        ("email", "ops at agents.dev"),
        ("uri", "agents.dev/d/"),
        ("uri", "https:///nohost"),
        ("date", "2026-13-01"),
    ):
        with pytest.raises(ValidationError):
            validator.validate({**good, name: bad})


def test_the_document_is_valid_json_schema(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)


# --- what the document says about specific fields ------------------------------------------


def _components(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()["components"]["schemas"]


def _property(components: dict[str, Any], model: str, field: str) -> dict[str, Any]:
    return components[model]["properties"][field]


def test_timestamps_ids_emails_and_urls_declare_their_formats(client: TestClient) -> None:
    c = _components(client)
    for model, field in (
        ("AccountOut", "created_at"),
        ("ListingOut", "created_at"),
        ("ThreadOut", "created_at"),
        ("ThreadOut", "updated_at"),
        ("DealPackage", "reveal_at"),
        ("DealPackage", "purge_at"),
        ("DealPackage", "created_at"),
        ("PublicReputation", "as_of"),
        ("ReputationAttestation", "expires_at"),
        ("Stats", "generated_at"),
    ):
        assert _property(c, model, field)["format"] == "date-time", (model, field)
    assert _property(c, "ListingOut", "expires_at")["type"] == "integer"
    for model, field in (
        ("AccountOut", "account_id"),
        ("AccountProfileOut", "account_id"),
        ("RegisteredAccount", "account_id"),
        ("RegistrationReplay", "account_id"),
        ("ListingOut", "id"),
        ("ThreadOut", "id"),
        ("ThreadOut", "listing_id"),
        ("DealPackage", "id"),
    ):
        assert _property(c, model, field)["format"] == "uuid", (model, field)
    assert _property(c, "ContactOut", "contact_email")["format"] == "email"
    assert _property(c, "Contact", "contact_email")["format"] == "email"
    for model, field in (
        ("ContactOut", "contact_url"),
        ("Contact", "contact_url"),
        ("DealReveal", "counterparty_endpoint"),
        ("DealReveal", "counterparty_agent_card_url"),
        ("Interface", "url"),
    ):
        assert _property(c, model, field)["format"] == "uri", (model, field)
    nullable_card = _property(c, "AccountProfileOut", "agent_card_url")["anyOf"]
    assert {"type": "string", "format": "uri"} in nullable_card


def test_closed_vocabularies_are_enumerations(app: FastAPI, client: TestClient) -> None:
    c = _components(client)

    def enum(schema: dict[str, Any]) -> list[Any]:
        return schema.get("enum") or [schema["const"]]

    assert enum(_property(c, "AccountOut", "status")) == ["active", "inactive"]
    assert enum(_property(c, "AccountProfileOut", "status")) == ["active", "inactive"]
    assert enum(_property(c, "ListingOut", "category")) == list(CATEGORIES)
    assert len(CATEGORIES) == 21
    assert enum(_property(c, "ListingOut", "listing_type")) == ["buy", "sell"]
    assert enum(_property(c, "ListingOut", "status")) == ["live", "matched", "expired", "cancelled"]
    assert enum(_property(c, "ThreadOut", "status")) == ["open", "rejected", "finalized", "closed"]
    assert enum(_property(c, "ThreadOut", "turn")) == ["poster", "negotiator"]
    assert enum(_property(c, "DealPackage", "status")) == ["active", "revealed"]
    assert enum(_property(c, "AccountProfileOut", "missing")["items"]) == [
        "contact_name",
        "contact_email",
        "deal_route",
    ]
    assert enum(_property(c, "AccountProfileOut", "blocked_actions")["items"]) == [
        "open_thread",
        "receive_thread",
    ]
    assert enum(_property(c, "NextStep", "action")) == ["set_contact", "set_route"]
    assert {n: enum(s) for n, s in c["CredentialPresentation"]["properties"].items()} == {
        "header": ["Authorization"],
        "scheme": ["Bearer"],
        "type": ["http"],
        "securityScheme": ["bearer"],
    }
    assert enum(_property(c, "LedgerVerdict", "status")) == ["ok", "broken"]
    assert enum(_property(c, "LedgerUnavailable", "status")) == ["unavailable"]
    assert "rate_limited" in enum(c["Reason"])


def test_protocol_bindings_are_this_deployments_values(app: FastAPI, client: TestClient) -> None:
    c = _components(client)
    bindings = list(protocol_bindings(app.state.context.settings))
    assert bindings[2] == "https://broker.test/bindings/webhook-v1"
    profile = _property(c, "AccountProfileOut", "route_protocol_binding")["anyOf"]
    assert {"type": "string", "enum": bindings} in profile
    assert _property(c, "Interface", "protocolBinding")["enum"] == bindings
    request = _property(c, "RouteRequest", "route_protocol_binding")["anyOf"]
    assert {"type": "string", "enum": bindings} in request


def test_the_bindings_follow_the_settings_of_each_app(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app(bindings_base="https://bindings.example/v")
    with TestClient(app) as client:
        c = _components(client)
    assert _property(c, "Interface", "protocolBinding")["enum"] == [
        "JSONRPC",
        "HTTP+JSON",
        "https://bindings.example/v/webhook-v1",
    ]


def _nullable(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "null" or any(
        _nullable(branch) for branch in schema.get("anyOf", [])
    )


def _response_components(doc: dict[str, Any]) -> set[str]:
    """Component schemas reachable from a response (not only from a request body)."""
    pending = [
        content["schema"]
        for operations in doc["paths"].values()
        for operation in operations.values()
        for response in operation["responses"].values()
        for content in response.get("content", {}).values()
    ]
    reached: set[str] = set()
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in reached:
                    reached.add(name)
                    pending.append(doc["components"]["schemas"][name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return reached


# Response fields that are required and may be null, each because docs/interface.md §1,
# §19 or §20.1 says so. Every other response field is never null.
NULLABLE = {
    ("AccountProfileOut", "contact"),
    ("AccountProfileOut", "deal_route"),
    ("AccountProfileOut", "route_protocol_binding"),
    ("AccountProfileOut", "agent_card_url"),
    # The events page's cursor: null until the account has had an event.
    ("EventPage", "next"),
    # JSON-RPC 2.0: an answer's id is null when the request's could not be read.
    ("JsonRpcResponse", "id"),
    ("LedgerVerdict", "computed_at"),
    ("LedgerProblem", "sequence"),
    ("SealedRange", "from"),
    ("Stats", "sealed_deals"),
    ("Stats", "median_seal_seconds"),
    ("StatusComponent", "uptime_30d"),
    ("StatusDay", "uptime"),
    ("StatusIncident", "resolved_at"),
}


def test_only_the_specified_response_fields_are_nullable(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    nullable = set()
    for name in _response_components(doc):
        schema = doc["components"]["schemas"][name]
        for field, declared in schema.get("properties", {}).items():
            if _nullable(declared):
                nullable.add((name, field))
                # Nullable means present: an optional field is omitted, never null.
                assert field in schema.get("required", []), (name, field)
            assert declared.get("default", "unset") is not None, (name, field)
    assert nullable == NULLABLE


def test_registration_declares_the_created_and_the_replayed_answer(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    responses = doc["paths"]["/v1/account/register"]["post"]["responses"]
    c = doc["components"]["schemas"]

    def schema_of(status: str) -> dict[str, Any]:
        ref = responses[status]["content"]["application/json"]["schema"]["$ref"]
        return c[ref.rsplit("/", 1)[1]]

    created, replayed = schema_of("201"), schema_of("200")
    assert set(created["required"]) == {
        "account_id",
        "api_key",
        "existing",
        "account_setup_required",
    }
    assert set(replayed["required"]) == {"account_id", "existing"}
    assert "api_key" not in replayed["properties"]
    assert replayed["properties"]["existing"]["const"] is True
    assert created["properties"]["existing"]["const"] is False
