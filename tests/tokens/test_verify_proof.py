"""The proof verifier of docs/interface.md §13.3 (agent_broker.client.verify) and `agent-broker
verify-proof`: each of the five steps fails closed, in order."""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timedelta

import httpx
import pyseto
import pytest
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.client.verify import (
    KeyDocumentUnavailable,
    MemoryNonceBook,
    NonceReused,
    ProofVerifier,
    ServiceKeys,
    WrongNonce,
    failed_step,
    key_document_url,
)
from agent_broker.tokens import keys, service
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.service import (
    BadSignature,
    InvalidOrigin,
    MalformedToken,
    TokenExpired,
    UnknownKey,
    WrongAudience,
    WrongType,
)
from tests.support import paseto
from tests.support.accounts import register

SERVICE = "https://broker.test"  # the test app's BROKER_PUBLIC_BASE_URL
KEY_DOCUMENT = SERVICE + "/.well-known/paseto-keys.json"
RP = "https://rp.example"
ATTEST = "/v1/account/reputation/attestation"
RECORD_FIELDS = {"handle", "seller", "buyer", "escrow", "funded", "domain_verified", "as_of"}


def mint_proof(client, agent, nonce: str, audience: str = RP) -> str:
    response = client.post(
        ATTEST, headers=agent.headers, json={"nonce": nonce, "audience": audience}
    )
    assert response.status_code == 200, response.text
    return response.json()["attestation"]


def mint_statement(client, agent) -> str:
    response = client.post(ATTEST, headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()["attestation"]


def verifier(client, book: MemoryNonceBook, audience: str = RP, **kwargs) -> ProofVerifier:
    """A relying party at `audience` whose key document requests reach the test app."""
    return ProofVerifier(
        service_base_url=SERVICE, audience=audience, nonces=book, http=client, **kwargs
    )


def served(document: object, *, status: int = 200, log: list[str] | None = None):
    """An HTTP client whose every answer is `document` (JSON) with `status`."""

    def handle(request: httpx.Request) -> httpx.Response:
        if log is not None:
            log.append(str(request.url))
        return httpx.Response(status, json=document)

    return httpx.Client(transport=httpx.MockTransport(handle))


def published(client) -> dict:
    return client.get("/.well-known/paseto-keys.json").json()


@pytest.fixture
def agent(client):
    return register(client)


@pytest.fixture
def book() -> MemoryNonceBook:
    return MemoryNonceBook()


# --- a proof that passes ------------------------------------------------------------------


def test_a_valid_proof_yields_the_record_inside_it(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)

    proof = verifier(client, book).verify(token, nonce=nonce)

    assert set(proof.record) == RECORD_FIELDS
    assert (
        proof.record["handle"] == client.get("/v1/account", headers=agent.headers).json()["handle"]
    )
    assert proof.record["seller"]["warm_start"] is True
    [key] = published(client)["keys"]
    assert proof.claims == paseto.verify(token, key["public_key_hex"])
    assert proof.record == {k: v for k, v in proof.claims.items() if k in RECORD_FIELDS}
    assert proof.expires_at == datetime.fromisoformat(proof.claims["exp"])
    assert proof.expires_at - datetime.fromisoformat(proof.claims["iat"]) == timedelta(minutes=5)


# --- step 1: the signature, against the service's own key document -------------------------


def test_the_keys_come_only_from_the_configured_service_never_from_the_presenter(
    client, agent, book
):
    nonce = book.issue()
    impostor = keys.generate()
    claims = {"typ": "svc.reputation-proof.v1", "nonce": nonce, "aud": RP, "handle": "x"}
    token = pyseto.encode(
        impostor.paseto_key,
        json.dumps({**claims, "exp": "2999-01-01T00:00:00Z"}).encode(),
        footer=json.dumps(
            {"kid": impostor.kid, "jku": "https://evil.example/keys.json", "key": "..."}
        ).encode(),
    ).decode()
    log: list[str] = []
    with served(published(client), log=log) as http:
        rp = ProofVerifier(service_base_url=SERVICE, audience=RP, nonces=book, http=http)
        with pytest.raises(UnknownKey):
            rp.verify(token, nonce=nonce)
    assert log == [KEY_DOCUMENT]  # only the configured location, and no refetch storm
    assert book.burn(nonce)  # a token failing step 1 does not consume the nonce


def test_a_key_document_naming_the_kid_with_another_key_refuses(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    kid = paseto.footer_of(token)["kid"]
    wrong = {"keys": [{"kid": kid, "public_key_hex": keys.generate().public_key_hex}]}
    with served(wrong) as http:
        rp = ProofVerifier(service_base_url=SERVICE, audience=RP, nonces=book, http=http)
        with pytest.raises(BadSignature):
            rp.verify(token, nonce=nonce)


def test_another_services_key_document_does_not_verify_this_services_proof(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    other = keys.generate()
    document = {"keys": [{"kid": other.kid, "public_key_hex": other.public_key_hex}]}
    with served(document) as http:
        rp = ProofVerifier(service_base_url=SERVICE, audience=RP, nonces=book, http=http)
        with pytest.raises(UnknownKey):
            rp.verify(token, nonce=nonce)


@pytest.mark.parametrize(
    "answer",
    [
        {"status": 503, "document": {"keys": []}},
        {"status": 404, "document": {"detail": "no"}},
        {"status": 200, "document": {"no_keys": True}},
        {"status": 200, "document": {"keys": "abc"}},
        {"status": 200, "document": ["not", "an", "object"]},
    ],
)
def test_an_unreadable_key_document_fails_closed(client, agent, book, answer):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    with served(answer["document"], status=answer["status"]) as http:
        rp = ProofVerifier(service_base_url=SERVICE, audience=RP, nonces=book, http=http)
        with pytest.raises(KeyDocumentUnavailable):
            rp.verify(token, nonce=nonce)


def test_a_redirected_or_unreachable_key_document_fails_closed(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    document = published(client)

    def redirect(request: httpx.Request) -> httpx.Response:
        # The keys are really there, but a verifier trusts only the configured location.
        if request.url.host == "elsewhere.example":
            return httpx.Response(200, json=document)
        return httpx.Response(302, headers={"Location": "https://elsewhere.example/keys.json"})

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    for handler in (redirect, unreachable):
        with httpx.Client(transport=httpx.MockTransport(handler), follow_redirects=True) as http:
            rp = ProofVerifier(service_base_url=SERVICE, audience=RP, nonces=book, http=http)
            with pytest.raises(KeyDocumentUnavailable):
                rp.verify(token, nonce=nonce)
    assert book.burn(nonce)


def test_a_tampered_or_malformed_token_is_refused(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    message, signature, footer = paseto.split(token)
    forged = message.replace(b'"funded":false', b'"funded":true')
    assert forged != message
    b64 = base64.urlsafe_b64encode
    tampered = "v4.public.{}.{}".format(
        b64(forged + signature).rstrip(b"=").decode(), b64(footer).rstrip(b"=").decode()
    )
    rp = verifier(client, book)
    with pytest.raises(BadSignature):
        rp.verify(tampered, nonce=nonce)
    for garbage in ("", "v4.public.abc", token.replace("v4.public.", "v4.local."), token + "!"):
        with pytest.raises(MalformedToken):
            rp.verify(garbage, nonce=nonce)
    assert rp.verify(token, nonce=nonce).record["funded"] is False


def test_the_key_document_is_cached_and_refetched_for_an_unknown_kid(app, client, agent):
    document = published(client)
    log: list[str] = []
    versions = [{"keys": []}, document]

    def handle(request: httpx.Request) -> httpx.Response:
        log.append(str(request.url))
        return httpx.Response(200, json=versions[min(len(log), len(versions)) - 1])

    token = mint_statement(client, agent)
    with httpx.Client(transport=httpx.MockTransport(handle)) as http:
        cached = ServiceKeys(SERVICE, http=http, refetch_interval=timedelta(hours=1))
        with pytest.raises(UnknownKey):
            cached.claims_of(token)  # fetched just now: no second fetch
        with pytest.raises(UnknownKey):
            cached.claims_of(token)  # refetch throttled
        assert log == [KEY_DOCUMENT]

        eager = ServiceKeys(SERVICE, http=http, refetch_interval=timedelta(0))
        log.clear()
        with pytest.raises(UnknownKey):
            eager.claims_of(token)  # fetched just now
        assert eager.claims_of(token)["typ"] == "svc.reputation.v1"  # a rotation shows up
        assert len(log) == 2
        eager.claims_of(token)
        assert len(log) == 2  # the cached document serves known kids


def test_the_service_base_url_must_be_https_or_loopback():
    assert key_document_url("https://broker.example/") == (
        "https://broker.example/.well-known/paseto-keys.json"
    )
    assert key_document_url("https://broker.example/api") == (
        "https://broker.example/api/.well-known/paseto-keys.json"
    )
    for loopback in ("http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080"):
        assert key_document_url(loopback).startswith(loopback)
    for refused in (
        "http://broker.example",
        "ftp://broker.example",
        "broker.example",
        "https://user:pw@broker.example",
        "https://broker.example/?k=1",
        "https://broker.example/#x",
        "",
    ):
        with pytest.raises(ValueError):
            key_document_url(refused)


# --- step 2: the type claim -----------------------------------------------------------------


def test_a_statement_or_a_deal_credential_is_not_a_proof(app, client, agent, book):
    nonce = book.issue()
    statement = mint_statement(client, agent)
    credential = service.mint_deal_credential(
        app.state.context.part(Signer),
        deal_id="d-1",
        bearer="poster",
        audience_origin=RP,
        now=clock.now(),
    ).token
    # Same key, right nonce and audience, but another type.
    lookalike = service.mint(
        app.state.context.part(Signer),
        {"typ": "svc.reputation.v1", "nonce": nonce, "aud": RP},
        timedelta(minutes=5),
        clock.now(),
    ).token
    untyped = pyseto.encode(
        app.state.context.part(Signer).paseto_key,
        json.dumps({"nonce": nonce, "aud": RP, "exp": "2999-01-01T00:00:00Z"}).encode(),
        footer=json.dumps({"kid": app.state.context.part(Signer).kid}).encode(),
    ).decode()
    rp = verifier(client, book)
    for token in (statement, credential, lookalike, untyped):
        with pytest.raises(WrongType):
            rp.verify(token, nonce=nonce)
    # None of them consumed the nonce: the real proof still passes.
    assert rp.verify(mint_proof(client, agent, nonce), nonce=nonce)


# --- step 3: the single-use nonce -------------------------------------------------------------


def test_a_nonce_is_burnt_on_first_use(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    rp = verifier(client, book)
    assert rp.verify(token, nonce=nonce)
    with pytest.raises(NonceReused):
        rp.verify(token, nonce=nonce)
    with pytest.raises(NonceReused):  # a second proof for the same nonce is refused too
        rp.verify(mint_proof(client, agent, nonce), nonce=nonce)


def test_a_proof_for_another_nonce_is_refused_and_burns_the_challenge(client, agent, book):
    nonce, other = book.issue(), book.issue()
    rp = verifier(client, book)
    with pytest.raises(WrongNonce):
        rp.verify(mint_proof(client, agent, other), nonce=nonce)
    with pytest.raises(NonceReused):  # one attempt per challenge
        rp.verify(mint_proof(client, agent, nonce), nonce=nonce)
    assert rp.verify(mint_proof(client, agent, other), nonce=other)  # untouched


def test_a_nonce_this_verifier_never_issued_is_refused(client, agent, book):
    nonce = "ab" * 16
    with pytest.raises(NonceReused):
        verifier(client, book).verify(mint_proof(client, agent, nonce), nonce=nonce)


def test_a_proof_without_a_nonce_claim_is_refused(app, client, book):
    nonce = book.issue()
    token = service.mint(
        app.state.context.part(Signer),
        {"typ": "svc.reputation-proof.v1", "aud": RP},
        timedelta(minutes=5),
        clock.now(),
    ).token
    with pytest.raises(WrongNonce):
        verifier(client, book).verify(token, nonce=nonce)


def test_a_lapsed_nonce_is_refused(client, agent):
    book = MemoryNonceBook(max_age=timedelta(minutes=10))
    nonce = book.issue()
    token = mint_proof(client, agent, nonce)
    clock.advance(timedelta(minutes=10, seconds=1))
    with pytest.raises(NonceReused):
        verifier(client, book).verify(token, nonce=nonce)


def test_the_memory_nonce_book():
    book = MemoryNonceBook()
    first, second = book.issue(), book.issue()
    assert re.fullmatch(r"[0-9a-f]{32}", first) and first != second
    assert not book.burn("0" * 32)
    assert book.burn(first)
    assert not book.burn(first)
    with pytest.raises(ValueError):
        book.remember(first)  # a burnt nonce cannot be issued again
    with pytest.raises(ValueError):
        book.remember(second)  # nor an outstanding one twice
    for bad in ("A" * 32, "0" * 31, 7):
        with pytest.raises(ValueError):
            book.remember(bad)  # type: ignore[arg-type]
    book.remember("f" * 32)
    assert book.burn("f" * 32)


# --- step 4: the audience ---------------------------------------------------------------------


def test_a_proof_for_another_audience_is_refused(client, agent, book):
    for audience in ("https://evil.example", "https://rp.example:8443", "https://sub.rp.example"):
        nonce = book.issue()
        with pytest.raises(WrongAudience):
            verifier(client, book).verify(mint_proof(client, agent, nonce, audience), nonce=nonce)


def test_the_verifier_canonicalises_its_own_configured_origin(client, agent, book):
    nonce = book.issue()
    token = mint_proof(client, agent, nonce, audience="https://RP.example:443/")
    rp = verifier(client, book, audience="HTTPS://rp.EXAMPLE/")
    assert rp.audience == RP
    assert rp.verify(token, nonce=nonce)

    nonce = book.issue()
    token = mint_proof(client, agent, nonce, audience="https://xn--bcher-kva.example")
    assert verifier(client, book, audience="https://XN--BCHER-KVA.example:443").verify(
        token, nonce=nonce
    )
    for unusable in (
        "http://rp.example",
        "https://rp.example/path",
        "https://192.0.2.1",
        "https://bücher.example",
    ):
        with pytest.raises(InvalidOrigin):
            verifier(client, book, audience=unusable)


# --- step 5: expiry ---------------------------------------------------------------------------


def test_an_expired_proof_is_refused(client, agent, book):
    first, second = book.issue(), book.issue()
    fresh, stale = mint_proof(client, agent, first), mint_proof(client, agent, second)
    rp = verifier(client, book)
    clock.advance(timedelta(minutes=4, seconds=58))
    assert rp.verify(fresh, nonce=first)
    clock.advance(timedelta(seconds=3))
    with pytest.raises(TokenExpired):
        rp.verify(stale, nonce=second)


# --- the order of the steps ----------------------------------------------------------------


def test_the_steps_run_in_order(app, client, agent, book):
    rp = verifier(client, book)
    # 3 before 4: another nonce and another audience.
    nonce = book.issue()
    token = mint_proof(client, agent, book.issue(), "https://evil.example")
    with pytest.raises(WrongNonce):
        rp.verify(token, nonce=nonce)
    # 4 before 5: expired and for another audience, with the right nonce (burnt at step 3).
    nonce = book.issue()
    token = mint_proof(client, agent, nonce, "https://evil.example")
    clock.advance(timedelta(minutes=6))
    with pytest.raises(WrongAudience):
        rp.verify(token, nonce=nonce)
    with pytest.raises(NonceReused):
        rp.verify(token, nonce=nonce)
    # 2 before 3: a statement presented against a nonce never issued.
    with pytest.raises(WrongType):
        rp.verify(mint_statement(client, agent), nonce="cd" * 16)


def test_each_refusal_names_its_step():
    assert failed_step(KeyDocumentUnavailable("x")) == (1, "signature")
    assert failed_step(UnknownKey("x")) == (1, "signature")
    assert failed_step(BadSignature("x")) == (1, "signature")
    assert failed_step(MalformedToken("x")) == (1, "signature")
    assert failed_step(WrongType("x")) == (2, "type")
    assert failed_step(WrongNonce("x")) == (3, "nonce")
    assert failed_step(NonceReused("x")) == (3, "nonce")
    assert failed_step(WrongAudience("x")) == (4, "audience")
    assert failed_step(TokenExpired("x")) == (5, "expiry")


# --- agent-broker verify-proof ----------------------------------------------------------------


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, database_url: str, var_dir) -> None:
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    monkeypatch.setenv("BROKER_VAR_DIR", str(var_dir))
    monkeypatch.delenv("BROKER_ENV", raising=False)
    monkeypatch.delenv("BROKER_PUBLIC_BASE_URL", raising=False)


def run(*args: str):
    return CliRunner().invoke(cli, ["verify-proof", *args])


def test_cli_prints_the_verified_record(client, live_server, agent, cli_env):
    nonce = "0f" * 16
    token = mint_proof(client, agent, nonce)
    result = run(
        token, "--nonce", nonce, "--audience", "https://RP.example/", "--service", live_server
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert set(record) == RECORD_FIELDS
    [key] = published(client)["keys"]
    claims = paseto.verify(token, key["public_key_hex"])
    assert record == {k: v for k, v in claims.items() if k in RECORD_FIELDS}
    assert "refused" not in result.stderr  # (the in-process live server logs there)


def test_cli_defaults_to_the_configured_public_base_url(
    client, live_server, agent, cli_env, monkeypatch
):
    monkeypatch.setenv("BROKER_PUBLIC_BASE_URL", live_server)
    nonce = "1e" * 16
    token = mint_proof(client, agent, nonce)
    result = run(token, "--nonce", nonce, "--audience", RP)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["handle"]


@pytest.mark.parametrize(
    ("case", "step"),
    [("wrong-nonce", 3), ("wrong-audience", 4), ("statement", 2), ("expired", 5), ("forged", 1)],
)
def test_cli_refusals_exit_1_with_the_reason(client, live_server, agent, cli_env, case, step):
    nonce, audience = "2d" * 16, RP
    token = mint_proof(client, agent, nonce)
    if case == "wrong-nonce":
        nonce = "3c" * 16
    elif case == "wrong-audience":
        audience = "https://other.example"
    elif case == "statement":
        token = mint_statement(client, agent)
    elif case == "expired":
        clock.advance(timedelta(minutes=5))
    elif case == "forged":
        body, footer = token.rsplit(".", 1)
        i = len(body) // 2
        token = f"{body[:i]}{'A' if body[i] != 'A' else 'B'}{body[i + 1 :]}.{footer}"
    result = run(token, "--nonce", nonce, "--audience", audience, "--service", live_server)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert f"proof refused at step {step}" in result.stderr


def test_cli_bad_arguments_exit_2_and_an_unreachable_service_exits_3(cli_env):
    nonce = "4b" * 16
    token = "v4.public.abc.def"
    assert run(token, "--nonce", "XYZ", "--audience", RP, "--service", SERVICE).exit_code == 2
    result = run(token, "--nonce", nonce, "--audience", "http://rp.example", "--service", SERVICE)
    assert result.exit_code == 2 and "--audience" in result.stderr
    result = run(token, "--nonce", nonce, "--audience", RP, "--service", "http://broker.example")
    assert result.exit_code == 2 and "--service" in result.stderr
    result = run(token, "--nonce", nonce, "--audience", RP, "--service", "http://127.0.0.1:9")
    assert result.exit_code == 3, result.output
    assert "step 1" in result.stderr


def test_cli_help_says_it_only_compares_the_nonce():
    result = CliRunner().invoke(cli, ["verify-proof", "--help"])
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "can only check that the proof carries the nonce given" in text
