"""POST /v1/account/reputation/attestation (docs/interface.md §13, §3, §23): plain statements and
proofs, checked by decoding the tokens with the independent verifier in tests/tokens."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta

import pytest
from sqlalchemy import delete
from starlette.requests import Request

from agent_broker import clock
from agent_broker.accounts.caller import Caller, CredentialKind
from agent_broker.accounts.models import Account
from agent_broker.problems import Forbidden
from agent_broker.reputation import attestation
from agent_broker.reputation.models import ReputationFacet
from agent_broker.reputation.routes import raw_body
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.service import InvalidOrigin, canonical_origin, is_proof_nonce
from tests.support import paseto
from tests.support.accounts import Agent, handle_of, register
from tests.support.http import assert_problem
from tests.support.market import finalize, open_thread

URL = "/v1/account/reputation/attestation"
NONCE = "0123456789abcdef0123456789abcdef"
AUDIENCE = "https://relying-party.example"
RECORD_FIELDS = {"handle", "seller", "buyer", "escrow", "funded", "domain_verified", "as_of"}
FACET_FIELDS = {"rating_sum", "rating_count", "finalized_count", "non_delivery_count", "warm_start"}
STATEMENT_CLAIMS = RECORD_FIELDS | {"typ", "iat", "exp"}
PROOF_CLAIMS = STATEMENT_CLAIMS | {"nonce", "aud"}


def post(client, agent: Agent | None, body: object = ..., *, raw: bytes | None = None):
    headers = agent.headers if agent else {}
    if raw is not None:
        return client.post(URL, headers=headers, content=raw)
    if body is ...:
        return client.post(URL, headers=headers)
    return client.post(URL, headers=headers, json=body)


def challenge(nonce: object = NONCE, audience: object = AUDIENCE) -> dict:
    return {"nonce": nonce, "audience": audience}


def decode(client, token: str) -> dict:
    """Claims of `token`, verified with the published key its footer names."""
    document = client.get("/.well-known/paseto-keys.json").json()
    keys = {key["kid"]: key["public_key_hex"] for key in document["keys"]}
    return paseto.verify(token, keys[paseto.footer_of(token)["kid"]])


def minted(client, agent: Agent, body: object = ..., **kwargs) -> tuple[dict, dict]:
    response = post(client, agent, body, **kwargs)
    assert response.status_code == 200, response.text
    envelope = response.json()
    return envelope, decode(client, envelope["attestation"])


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- plain statements -------------------------------------------------------------------


def test_no_body_mints_a_24_hour_statement_of_the_callers_own_record(app, client):
    agent = register(client)
    before = clock.now().replace(microsecond=0)
    response = post(client, agent)
    after = clock.now()

    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    envelope = response.json()
    assert set(envelope) == {"attestation", "handle", "expires_at", "verify_with"}
    assert envelope["verify_with"] == "/.well-known/paseto-keys.json"
    assert envelope["handle"] == handle_of(client, agent)
    token = envelope["attestation"]
    assert token.startswith("v4.public.")
    assert paseto.footer_of(token) == {"kid": app.state.context.part(Signer).kid}

    claims = decode(client, token)
    assert set(claims) == STATEMENT_CLAIMS
    assert claims["typ"] == "svc.reputation.v1"
    assert claims["handle"] == envelope["handle"]
    assert "scorecard" not in claims
    for role in ("seller", "buyer"):
        assert set(claims[role]) == FACET_FIELDS
        assert claims[role] == {
            "rating_sum": 5,
            "rating_count": 1,
            "finalized_count": 0,
            "non_delivery_count": 0,
            "warm_start": True,
        }
    assert (claims["funded"], claims["domain_verified"]) == (False, False)
    issued = at(claims["iat"])
    assert before <= issued <= after
    assert at(claims["as_of"]) == issued
    assert at(claims["exp"]) - issued == timedelta(hours=24)
    assert envelope["expires_at"] == claims["exp"]


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",
        b'{"purpose": "directory listing"}',
        b'{"Nonce": "0123456789abcdef0123456789abcdef", "AUDIENCE": "https://a.example"}',
        b'{"nonces": [], "aud": "https://a.example"}',
        b'  {"note": null}\n',
    ],
    ids=["empty-object", "other-key", "other-case", "near-names", "whitespace-around"],
)
def test_an_object_naming_neither_key_mints_a_statement(client, raw):
    _, claims = minted(client, register(client), raw=raw)
    assert claims["typ"] == "svc.reputation.v1"
    assert set(claims) == STATEMENT_CLAIMS


def test_a_statement_is_always_about_the_callers_own_handle(client):
    first, second = register(client), register(client)
    envelope, claims = minted(client, second, {"handle": handle_of(client, first)})
    assert envelope["handle"] == claims["handle"] == handle_of(client, second)


# --- proofs -------------------------------------------------------------------------------


def test_a_challenge_mints_a_5_minute_proof_with_nonce_and_audience(app, client):
    agent = register(client)
    envelope, claims = minted(client, agent, challenge())

    assert set(claims) == PROOF_CLAIMS
    assert claims["typ"] == "svc.reputation-proof.v1"
    assert (claims["nonce"], claims["aud"]) == (NONCE, AUDIENCE)
    assert claims["handle"] == envelope["handle"] == handle_of(client, agent)
    assert "scorecard" not in claims
    assert claims["seller"]["warm_start"] is True and claims["buyer"]["warm_start"] is True
    assert at(claims["exp"]) - at(claims["iat"]) == timedelta(minutes=5)
    assert envelope["expires_at"] == claims["exp"]
    assert envelope["verify_with"] == "/.well-known/paseto-keys.json"
    assert paseto.footer_of(envelope["attestation"]) == {"kid": app.state.context.part(Signer).kid}


def test_other_keys_beside_a_challenge_are_ignored(client):
    _, claims = minted(client, register(client), {**challenge(), "purpose": "x", "aud": "y"})
    assert claims["typ"] == "svc.reputation-proof.v1"
    assert claims["aud"] == AUDIENCE
    assert "purpose" not in claims


def test_tokens_carry_the_public_record_without_its_scorecard(client, market):
    thread = open_thread(client, market.opener, market.listing_id).json()["id"]
    deal = finalize(client, market.poster, thread).json()["id"]
    rated = client.post(
        f"/v1/deals/{deal}/ratings",
        json={"score": 4, "delivered": True},
        headers=market.opener.headers,
    )
    assert rated.status_code == 201, rated.text

    for body in (..., challenge()):
        _, claims = minted(client, market.poster, body)
        public = client.get(f"/v1/reputation/{claims['handle']}").json()
        assert "scorecard" in public
        record = {k: v for k, v in claims.items() if k in RECORD_FIELDS}
        expected = {k: v for k, v in public.items() if k in RECORD_FIELDS}
        assert set(public) - RECORD_FIELDS == {"scorecard"}
        assert {**record, "as_of": None} == {**expected, "as_of": None}
        # The poster sold once and got a rating; it never bought.
        assert claims["seller"] == {
            "rating_sum": 9,
            "rating_count": 2,
            "finalized_count": 1,
            "non_delivery_count": 0,
            "warm_start": False,
        }
        assert claims["buyer"]["warm_start"] is True
        assert claims["funded"] is True


@pytest.mark.parametrize(
    ("audience", "signed"),
    [
        ("https://relying-party.example", "https://relying-party.example"),
        ("HTTPS://Relying-Party.EXAMPLE", "https://relying-party.example"),
        ("https://relying-party.example/", "https://relying-party.example"),
        ("https://relying-party.example:443", "https://relying-party.example"),
        ("https://relying-party.example:8443/", "https://relying-party.example:8443"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("https://XN--BCHER-KVA.example:443/", "https://xn--bcher-kva.example"),
    ],
)
def test_the_audience_is_signed_in_canonical_form(client, audience, signed):
    _, claims = minted(client, register(client), challenge(audience=audience))
    assert claims["aud"] == signed


# --- malformed challenges: 400 invalid_input, never a statement ----------------------------

MALFORMED_BODIES = {
    "only-nonce": json.dumps({"nonce": NONCE}).encode(),
    "only-audience": json.dumps({"audience": AUDIENCE}).encode(),
    "only-nonce-null": b'{"nonce": null}',
    "bad-json": b'{"nonce": "' + NONCE.encode() + b'", ',
    "not-json": b"nonce=" + NONCE.encode(),
    "whitespace-only": b"   ",
    "array": json.dumps([challenge()]).encode(),
    "string": b'"hello"',
    "number": b"42",
    "null": b"null",
    "nan": b'{"x": NaN}',
    "duplicate-key": b'{"nonce": "' + NONCE.encode() + b'", "audience": "https://a.example", '
    b'"audience": "https://b.example"}',
    "not-utf8": b'{"x": "\xff"}',
    "utf8-bom": b"\xef\xbb\xbf{}",
    "deep-nesting": b"[" * 1024,
    "over-1-KiB-object": json.dumps({"pad": "x" * 1100}).encode(),
    "over-1-KiB-challenge": json.dumps({**challenge(), "pad": "x" * 1100}).encode(),
}


@pytest.mark.parametrize("raw", MALFORMED_BODIES.values(), ids=MALFORMED_BODIES.keys())
def test_a_malformed_body_is_400_invalid_input(client, raw):
    agent = register(client)
    body = assert_problem(post(client, agent, raw=raw), 400, "invalid_input")
    assert body["errors"][0]["field"] in ("body", "nonce", "audience")


BAD_NONCES = {
    "uppercase": NONCE.upper(),
    "31-chars": NONCE[:31],
    "33-chars": NONCE + "0",
    "not-hex": "g" * 32,
    "trailing-newline": NONCE[:31] + "\n",
    "spaces": " " + NONCE[1:],
    "empty": "",
    "number": 1234,
    "null": None,
    "list": [NONCE],
    "fullwidth-digits": "０" * 32,
}


@pytest.mark.parametrize("nonce", BAD_NONCES.values(), ids=BAD_NONCES.keys())
def test_a_nonce_that_is_not_32_lowercase_hex_is_400(client, nonce):
    body = assert_problem(
        post(client, register(client), challenge(nonce=nonce)), 400, "invalid_input"
    )
    assert body["errors"] == [{"field": "nonce", "message": body["detail"]}]


BAD_AUDIENCES = {
    "http": "http://relying-party.example",
    "no-scheme": "relying-party.example",
    "other-scheme": "wss://relying-party.example",
    "userinfo": "https://user@relying-party.example",
    "userinfo-password": "https://user:pw@relying-party.example",
    "path": "https://relying-party.example/login",
    "double-slash": "https://relying-party.example//",
    "query": "https://relying-party.example?x=1",
    "empty-query": "https://relying-party.example/?",
    "fragment": "https://relying-party.example#top",
    "port-0": "https://relying-party.example:0",
    "port-65536": "https://relying-party.example:65536",
    "port-plus": "https://relying-party.example:+443",
    "port-minus": "https://relying-party.example:-1",
    "port-leading-zero": "https://relying-party.example:0443",
    "port-empty": "https://relying-party.example:",
    "port-hex": "https://relying-party.example:0x1bb",
    "ipv4": "https://192.0.2.1",
    "ipv6": "https://[2001:db8::1]",
    "trailing-dot": "https://relying-party.example.",
    "space": "https://relying party.example",
    "leading-space": " https://relying-party.example",
    "empty-host": "https://",
    "underscore": "https://relying_party.example",
    "percent": "https://relying%2Dparty.example",
    "bad-a-label": "https://xn--a.example",
    "unicode-host": "https://bücher.example",
    "unicode-host-upper": "https://BÜCHER.example:443/",
    "fullwidth-dot": "https://relying-party\uff0eexample",
    "not-a-string": 42,
    "null": None,
}


@pytest.mark.parametrize("audience", BAD_AUDIENCES.values(), ids=BAD_AUDIENCES.keys())
def test_an_audience_that_is_not_an_https_origin_is_400(client, audience):
    response = post(client, register(client), challenge(audience=audience))
    body = assert_problem(response, 400, "invalid_input")
    assert body["errors"] == [{"field": "audience", "message": body["detail"]}]


def test_the_body_limit_is_1024_bytes(client):
    agent = register(client)
    prefix, suffix = b'{"pad": "', b'"}'
    exactly = prefix + b"x" * (1024 - len(prefix) - len(suffix)) + suffix
    assert len(exactly) == 1024
    _, claims = minted(client, agent, raw=exactly)
    assert claims["typ"] == "svc.reputation.v1"
    one_more = exactly.replace(b'"}', b'x"}')
    assert len(one_more) == 1025
    assert_problem(post(client, agent, raw=one_more), 400, "invalid_input")


def test_a_streamed_body_over_1_KiB_without_a_length_is_400(client):
    agent = register(client)
    chunks = iter([b'{"pad": "', b"x" * 600, b"x" * 600, b'"}'])
    response = client.post(URL, headers=agent.headers, content=chunks)
    assert_problem(response, 400, "invalid_input")


def test_the_body_is_never_read_past_1_KiB_and_one_byte():
    received: list[int] = []

    async def endless() -> dict:
        received.append(1)
        return {"type": "http.request", "body": b"x" * 100, "more_body": True}

    scope = {"type": "http", "method": "POST", "headers": [], "path": URL}
    body = asyncio.run(raw_body(Request(scope, endless)))
    assert body.oversize and len(body.data) == 1025
    assert len(received) == 11

    declared = {**scope, "headers": [(b"content-length", b"5000000")]}
    body = asyncio.run(raw_body(Request(declared, endless)))
    assert body.oversize and len(received) == 11  # refused on the declared length alone


# --- authentication and the caller's own record --------------------------------------------


@pytest.mark.parametrize("body", [..., challenge(), {"nonce": NONCE}], ids=["none", "proof", "bad"])
def test_no_key_or_an_unknown_key_is_401_before_any_body_check(client, body):
    assert_problem(post(client, None, body), 401, "unauthorized")
    stranger = Agent(account_id="-", api_key="ab_live_" + "0" * 32)
    assert_problem(post(client, stranger, body), 401, "unauthorized")


@pytest.mark.parametrize("body", [..., challenge()], ids=["statement", "proof"])
def test_a_disabled_key_is_403_api_key_disabled(app, client, body):
    agent = register(client)
    with app.state.context.db.writer() as session:
        session.get(Account, agent.account_id).status = "inactive"
        session.commit()
    assert_problem(post(client, agent, body), 403, "api_key_disabled")


@pytest.mark.parametrize("body", [..., challenge()], ids=["statement", "proof"])
def test_a_missing_own_record_is_404_not_found(app, client, body):
    agent = register(client)
    with app.state.context.db.writer() as session:
        session.execute(
            delete(ReputationFacet).where(ReputationFacet.account_id == agent.account_id)
        )
        session.commit()
    assert_problem(post(client, agent, body), 404, "not_found")


# --- scopes (the OAuth seam) ---------------------------------------------------------------


def token_caller(scopes: set[str] | None, via: CredentialKind = CredentialKind.oauth) -> Caller:
    """What the auth seam resolves: an API key holds every scope (None), a token its own."""
    return Caller(
        account=Account(id="acct"),
        via=via,
        scopes=None if scopes is None else frozenset(scopes),
    )


def test_an_api_key_holds_every_scope():
    caller = token_caller(None, CredentialKind.api_key)
    attestation.require_scopes(caller, attestation.PROOF_SCOPES)


@pytest.mark.parametrize(
    ("scopes", "statement", "proof"),
    [
        ({"read", "account:write"}, True, True),
        ({"read"}, True, False),  # a read-only token still gets the statement
        ({"account:write"}, False, False),  # 403 on every mint
        (set(), False, False),
    ],
)
def test_token_scopes_decide_which_mints_are_allowed(scopes, statement, proof):
    caller = token_caller(scopes)
    for needed, allowed in (
        (attestation.STATEMENT_SCOPES, statement),
        (attestation.PROOF_SCOPES, proof),
    ):
        if allowed:
            attestation.require_scopes(caller, needed)
        else:
            with pytest.raises(Forbidden):
                attestation.require_scopes(caller, needed)


def test_a_token_caller_without_scopes_fails_closed():
    caller = token_caller(set(), CredentialKind.session)
    with pytest.raises(Forbidden):
        attestation.require_scopes(caller, attestation.STATEMENT_SCOPES)


# --- the proof-mint rate: 120 per account per hour -----------------------------------------


def assert_rate_limited(response) -> None:
    body = assert_problem(response, 429, "rate_limited")
    seconds = body["retryAfterSeconds"]
    assert isinstance(seconds, int) and 1 <= seconds <= 3600
    assert response.headers["retry-after"] == str(seconds)


def test_120_proofs_an_hour_and_statements_never_count(client):
    agent = register(client)
    for _ in range(3):  # statements before the proofs take nothing from the budget
        assert post(client, agent).status_code == 200
    for i in range(120):
        response = post(client, agent, challenge(nonce=f"{i:032x}"))
        assert response.status_code == 200, (i, response.text)
    assert_rate_limited(post(client, agent, challenge()))
    # Refused proofs are not given a statement instead, and statements are never limited.
    _, claims = minted(client, agent)
    assert claims["typ"] == "svc.reputation.v1"
    assert_rate_limited(post(client, agent, challenge()))
    # The limit is per account.
    assert post(client, register(client), challenge()).status_code == 200


def test_a_challenge_refused_for_its_nonce_or_audience_still_counts(client):
    agent = register(client)
    for i in range(120):
        bad = challenge(nonce="NOT-HEX") if i % 2 else challenge(audience="http://rp.example")
        assert_problem(post(client, agent, bad), 400, "invalid_input")
    assert_rate_limited(post(client, agent, challenge()))
    assert_rate_limited(post(client, agent, challenge(nonce=None)))  # counted before values


def test_body_shape_refusals_do_not_count(client):
    agent = register(client)
    shape_refusals = [
        MALFORMED_BODIES["only-nonce"],
        MALFORMED_BODIES["bad-json"],
        MALFORMED_BODIES["over-1-KiB-challenge"],
        MALFORMED_BODIES["array"],
    ]
    for raw in shape_refusals * 10:
        assert_problem(post(client, agent, raw=raw), 400, "invalid_input")
    for i in range(120):
        assert post(client, agent, challenge(nonce=f"{i:032x}")).status_code == 200, i
    assert_rate_limited(post(client, agent, challenge()))


# --- the canonical audience (pure rule shared with the verifier) ---------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("https://example.org", "https://example.org"),
        ("HTTPS://EXAMPLE.ORG", "https://example.org"),
        ("https://example.org/", "https://example.org"),
        ("https://example.org:443/", "https://example.org"),
        ("https://example.org:1", "https://example.org:1"),
        ("https://example.org:65535", "https://example.org:65535"),
        ("https://localhost:8443", "https://localhost:8443"),
        ("https://r3---sn-abc.video.example", "https://r3---sn-abc.video.example"),
        ("https://xn--strae-oqa.example", "https://xn--strae-oqa.example"),
        ("https://xn--wgv71a119e.JP", "https://xn--wgv71a119e.jp"),
        ("https://XN--BCHER-KVA.example", "https://xn--bcher-kva.example"),
        ("https://" + "a" * 63 + ".example", "https://" + "a" * 63 + ".example"),
    ],
)
def test_canonical_origin_forms(text, canonical):
    assert canonical_origin(text) == canonical
    assert canonical_origin(canonical) == canonical  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        *[a for a in BAD_AUDIENCES.values() if isinstance(a, str)],
        "https://" + "a" * 64 + ".example",  # label over 63 characters
        "https://" + ".".join(["a" * 50] * 5) + ".example",  # host over 253 characters
        "https://-example.org",
        "https://example-.org",
        "https://a..example",
        "https://127.1",
        "https://0x7f.0.0.1",
        "https://example.0x1f",
        "https://example.org:٤٤٣",  # Arabic-Indic digits are not plain decimal
        "https://example.org\\",
        "https://☃.example",
        "https://straße.example",
        "https://日本語。ＪＰ",
        "https://xn--abc-.example",
        "https:example.org",
        "https:/example.org",
    ],
)
def test_canonical_origin_refusals(text):
    with pytest.raises(InvalidOrigin):
        canonical_origin(text)


def test_nonce_shape():
    assert is_proof_nonce(NONCE)
    assert not any(is_proof_nonce(n) for n in BAD_NONCES.values())


def test_openapi_documents_the_optional_challenge_and_the_envelope(client):
    operation = client.get("/openapi.json").json()["paths"][URL]["post"]
    request = operation["requestBody"]
    assert request["required"] is False
    schema = request["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == {"nonce", "audience"}
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/ReputationAttestation")
    assert {"400", "401", "403", "404", "429"} <= set(operation["responses"])
