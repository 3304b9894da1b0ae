"""GET /.well-known/paseto-keys.json and the key registration behind it."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from agent_broker import clock
from agent_broker.tokens import keys, registry
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.models import SigningKey
from tests.support.paseto import RFC8032_PUBLIC_HEX, RFC8032_SEED_HEX

PATH = "/.well-known/paseto-keys.json"
SEVEN_DAYS = timedelta(days=7)


def _document(client: TestClient) -> dict:
    response = client.get(PATH)  # no x-api-key: the document is public
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def _start_another_worker(app: FastAPI, signer: keys.Signer) -> None:
    """What a process starting with `signer`'s key does (see tokens/startup.py)."""
    with app.state.context.db.writer() as session:
        registry.register_current(session, signer, now=clock.now())
        session.commit()


def _published(client: TestClient) -> dict[str, bool]:
    return {key["kid"]: key["current"] for key in _document(client)["keys"]}


def test_the_key_document_lists_the_current_key_without_authentication(app, client):
    body = _document(client)
    assert set(body) == {"keys", "algorithm", "token_ttl_seconds", "usage"}
    assert body["algorithm"] == "Ed25519"
    assert body["token_ttl_seconds"] == 604800
    assert isinstance(body["usage"], str) and "kid" in body["usage"]

    [key] = body["keys"]
    assert set(key) == {"kid", "purpose", "version", "public_key_hex", "current"}
    assert (key["purpose"], key["version"], key["current"]) == ("public", "v4", True)
    assert key["kid"] == app.state.context.part(Signer).kid
    assert key["public_key_hex"] == app.state.context.part(Signer).public_key_hex
    assert len(key["public_key_hex"]) == 64
    assert key["kid"] == hashlib.sha256(bytes.fromhex(key["public_key_hex"])).hexdigest()[:16]


def test_openapi_describes_the_key_document(client):
    spec = client.get("/openapi.json").json()
    operation = spec["paths"][PATH]["get"]
    assert "security" not in operation
    schema_ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    document = spec["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]
    assert set(document["required"]) == {"keys", "algorithm", "token_ttl_seconds", "usage"}
    key = spec["components"]["schemas"]["PublishedKey"]
    assert set(key["required"]) == {"kid", "purpose", "version", "public_key_hex", "current"}


def test_the_development_key_is_kept_under_the_var_dir(app, client, var_dir: Path):
    on_disk = keys.signer_for(app.state.context.settings)
    assert (var_dir / "signing-key.pem").exists()
    assert _published(client) == {on_disk.kid: True}


def test_the_configured_signing_key_is_the_one_published(make_app, var_dir: Path):
    app = make_app(signing_key=RFC8032_SEED_HEX, var_dir=str(var_dir))
    with TestClient(app) as client:
        [key] = _document(client)["keys"]
    assert (key["kid"], key["public_key_hex"]) == ("21fe31dfa154a261", RFC8032_PUBLIC_HEX)
    assert not var_dir.exists()


def test_a_bad_signing_key_stops_start_up(make_app, var_dir: Path):
    with pytest.raises(ValidationError, match="signing_key"):
        make_app(signing_key="not-a-key", var_dir=str(var_dir))


def test_workers_starting_with_the_same_key_publish_it_once(app, client, make_app, var_dir):
    with app.state.context.db.reader() as session:
        before = session.scalars(select(SigningKey)).all()
    clock.advance(timedelta(hours=1))
    with TestClient(make_app(var_dir=str(var_dir))) as second:
        assert _published(second) == {app.state.context.part(Signer).kid: True}
    with app.state.context.db.reader() as session:
        after = session.scalars(select(SigningKey)).all()
    assert [(k.kid, k.activated_at, k.retired_at) for k in after] == [
        (k.kid, k.activated_at, None) for k in before
    ]


def test_a_retired_key_stays_published_for_one_token_life(app, client):
    old = app.state.context.part(Signer).kid
    new = keys.generate()
    _start_another_worker(app, new)

    body = _document(client)
    assert [(k["kid"], k["current"]) for k in body["keys"]] == [(new.kid, True), (old, False)]
    assert body["keys"][0]["public_key_hex"] == new.public_key_hex

    clock.advance(SEVEN_DAYS - timedelta(seconds=1))
    assert _published(client) == {new.kid: True, old: False}
    clock.advance(timedelta(seconds=1))
    assert _published(client) == {new.kid: True}


def test_each_rotation_retires_the_previous_key_at_that_moment(app, client):
    first = app.state.context.part(Signer).kid
    second, third = keys.generate(), keys.generate()
    _start_another_worker(app, second)
    clock.advance(timedelta(days=3))
    _start_another_worker(app, third)
    assert _published(client) == {third.kid: True, second.kid: False, first: False}
    clock.advance(timedelta(days=4))
    assert _published(client) == {third.kid: True, second.kid: False}
    clock.advance(timedelta(days=3))
    assert _published(client) == {third.kid: True}


def test_starting_again_with_a_retired_key_makes_it_current_again(app, client, make_app, var_dir):
    # A rollback: the operator goes back to the previous key, so it must stay published.
    old = app.state.context.part(Signer).kid
    newer = keys.generate()
    _start_another_worker(app, newer)
    clock.advance(timedelta(days=6))
    with TestClient(make_app(var_dir=str(var_dir))) as restarted:
        assert restarted.app.state.context.part(Signer).kid == old
        assert _published(restarted) == {old: True, newer.kid: False}
    clock.advance(timedelta(days=6))
    assert _published(client) == {old: True, newer.kid: False}
    with app.state.context.db.reader() as session:
        row = session.get(SigningKey, old)
    assert row is not None and row.retired_at is None
