"""`agent-broker keys rotate` and `agent-broker keys list`."""

from __future__ import annotations

import re
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from agent_broker import clock
from agent_broker.cli import app as cli
from agent_broker.config import Settings
from agent_broker.tokens import keys
from agent_broker.tokens.keys import Signer
from tests.support.paseto import RFC8032_SEED_HEX
from tests.support.settings import TEST_SECRET

PATH = "/.well-known/paseto-keys.json"


@pytest.fixture
def env(database_url: str, var_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKER_DATABASE_URL", database_url)
    monkeypatch.setenv("BROKER_KEY_HASH_SECRET", TEST_SECRET)
    monkeypatch.setenv("BROKER_VAR_DIR", str(var_dir))
    monkeypatch.delenv("BROKER_SIGNING_KEY", raising=False)
    monkeypatch.delenv("BROKER_ENV", raising=False)


def _published(client: TestClient) -> dict[str, bool]:
    return {key["kid"]: key["current"] for key in client.get(PATH).json()["keys"]}


def _keys_list() -> list[list[str]]:
    result = CliRunner().invoke(cli, ["keys", "list"])
    assert result.exit_code == 0, result.output
    return [line.split("\t") for line in result.stdout.splitlines()]


def test_rotation_in_development_swaps_the_key_file_and_keeps_the_old_key_published(
    app, client, env, var_dir: Path
):
    old = app.state.context.part(Signer).kid
    clock.advance(timedelta(hours=2))

    before = clock.now().replace(microsecond=0)
    result = CliRunner().invoke(cli, ["keys", "rotate"])
    assert result.exit_code == 0, result.output
    after = clock.now()

    new = keys.signer_for(Settings()).kid
    assert new != old
    assert f"signing key {new} is current" in result.stdout
    assert old in result.stdout
    retired_file = var_dir / f"signing-key.{old}.retired.pem"
    assert keys.Signer.from_private_key(keys.parse_secret(retired_file.read_text())).kid == old
    for path in (var_dir / "signing-key.pem", retired_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in var_dir.iterdir()) == sorted(
        ["signing-key.pem", retired_file.name]
    )
    assert _published(client) == {new: True, old: False}

    listed = [dict(field.split("=") for field in row[2:]) for row in _keys_list()]
    assert [row[:2] for row in _keys_list()] == [[new, "current"], [old, "retired"]]
    assert (listed[0]["retired"], listed[0]["published_until"]) == ("-", "-")
    rotated_at = datetime.fromisoformat(listed[0]["activated"])
    assert before <= rotated_at <= after
    assert listed[1]["retired"] == listed[0]["activated"]
    assert listed[1]["published_until"] == clock.rfc3339(rotated_at + timedelta(days=7))
    assert datetime.fromisoformat(listed[1]["activated"]) < before

    clock.advance(timedelta(days=7))
    assert _published(client) == {new: True}


def test_rotation_with_the_key_in_the_environment_prints_a_secret_and_records_nothing(
    make_app, env, var_dir: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("BROKER_ENV", "production")
    monkeypatch.setenv("BROKER_SIGNING_KEY", RFC8032_SEED_HEX)
    monkeypatch.setenv("BROKER_CARD_SIGNING_KEY", "7c" * 32)
    old = "21fe31dfa154a261"
    with TestClient(make_app(signing_key=RFC8032_SEED_HEX, var_dir=str(var_dir))) as client:
        result = CliRunner().invoke(cli, ["keys", "rotate"])
        assert result.exit_code == 0, result.output
        assert re.fullmatch(r"[0-9a-f]{64}\n", result.stdout)
        secret = result.stdout.strip()
        new = keys.signer_for(Settings(signing_key=secret)).kid
        assert "BROKER_SIGNING_KEY" in result.stderr and new in result.stderr
        assert secret not in result.stderr
        assert not var_dir.exists()
        assert _published(client) == {old: True}
        assert [row[:2] for row in _keys_list()] == [[old, "current"]]

    # The new key is published by the first process that starts with it.
    with TestClient(make_app(signing_key=secret, var_dir=str(var_dir))) as client:
        assert _published(client) == {new: True, old: False}


def test_keys_list_before_any_start_lists_nothing(env):
    result = CliRunner().invoke(cli, ["keys", "list"])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no signing keys yet" in result.stderr


@pytest.mark.parametrize("command", [["keys", "rotate"], ["serve", "--no-migrate"], ["serve"]])
def test_a_key_file_that_holds_no_key_is_one_line_and_exit_1(app, env, var_dir: Path, command):
    damaged = keys.key_file(var_dir)
    damaged.parent.mkdir(parents=True, exist_ok=True)
    damaged.write_text("not a key\n")
    damaged.chmod(0o600)
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 1
    assert "signing key error:" in result.stderr and "does not hold an Ed25519" in result.stderr
    assert "Traceback" not in result.output
    assert damaged.read_text() == "not a key\n"  # left for the operator to look at
