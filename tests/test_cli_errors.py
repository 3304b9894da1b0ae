"""Operator commands fail in one line: a rejected setting is named without echoing its
value (it may be a secret), and a database that is not migrated is reported as such
instead of a traceback."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import uvicorn
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.cli import serve as serve_module
from agent_broker.migrations.migrate import upgrade
from agent_broker.tokens import keys
from tests.support.settings import TEST_SECRET

NOT_MIGRATED = "database is not migrated; run `agent-broker db upgrade`"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("BROKER_ENV", "BROKER_SIGNING_KEY", "BROKER_REDIS_URL", "BROKER_DB_POOL_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BROKER_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("BROKER_KEY_HASH_SECRET", TEST_SECRET)
    monkeypatch.setenv("BROKER_DATABASE_URL", f"sqlite:///{tmp_path / 'broker.db'}")


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, list(args))


# --- configuration errors ----------------------------------------------------------------


def test_a_short_production_secret_is_named_but_not_echoed(clean_env, monkeypatch):
    short_secret = "hunter2-short-secret"
    signing_key = "ab" * 32
    monkeypatch.setenv("BROKER_ENV", "production")
    monkeypatch.setenv("BROKER_KEY_HASH_SECRET", short_secret)
    monkeypatch.setenv("BROKER_SIGNING_KEY", signing_key)
    result = _run("keys", "list")
    assert result.exit_code == 2
    assert short_secret not in result.output
    assert signing_key not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("configuration error: ")
    assert "BROKER_KEY_HASH_SECRET" in lines[0]
    assert "Traceback" not in result.output


def test_a_malformed_setting_is_named_but_not_echoed(clean_env, monkeypatch):
    monkeypatch.setenv("BROKER_DB_POOL_SIZE", "pool-of-abc")
    result = _run("db", "upgrade")
    assert result.exit_code == 2
    assert "pool-of-abc" not in result.output
    assert result.stderr.splitlines() == [
        "configuration error: BROKER_DB_POOL_SIZE: "
        "Input should be a valid integer, unable to parse string as an integer"
    ]


def test_each_rejected_setting_gets_its_own_line(clean_env, monkeypatch):
    monkeypatch.setenv("BROKER_DB_POOL_SIZE", "pool-of-abc")
    monkeypatch.setenv("BROKER_THREAD_TTL_DAYS", "99999")
    monkeypatch.setenv("BROKER_ENV", "staging-ish")
    result = _run("jobs", "run", "expire-listings")
    assert result.exit_code == 2
    for value in ("pool-of-abc", "99999", "staging-ish"):
        assert value not in result.output
    named = sorted(line.split(":")[1].strip() for line in result.stderr.splitlines())
    assert named == ["BROKER_DB_POOL_SIZE", "BROKER_ENV", "BROKER_THREAD_TTL_DAYS"]


# --- a database that is not migrated --------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["admin", "credit", str(uuid.uuid4()), "100", "--reason", "launch"],
        ["jobs", "run", "expire-listings"],
        ["keys", "list"],
        ["keys", "rotate"],
        ["serve", "--no-migrate"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_commands_on_an_empty_database_say_it_is_not_migrated(clean_env, args):
    result = _run(*args)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [NOT_MIGRATED]
    assert result.stdout == ""
    assert isinstance(result.exception, SystemExit)  # no traceback


def test_a_partly_migrated_database_is_not_migrated(clean_env, tmp_path):
    upgrade(f"sqlite:///{tmp_path / 'broker.db'}", "0004")
    result = _run("keys", "list")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [NOT_MIGRATED]


def test_rotation_leaves_the_key_file_alone_when_the_database_is_not_migrated(clean_env, tmp_path):
    key_file = keys.key_file(str(tmp_path / "var"))
    assert _run("keys", "rotate").exit_code == 1
    assert not key_file.exists()


def test_a_migrated_database_passes_the_check(clean_env, tmp_path):
    upgrade(f"sqlite:///{tmp_path / 'broker.db'}")
    result = _run("keys", "list")
    assert result.exit_code == 0, result.output
    assert NOT_MIGRATED not in result.output


def test_an_unreachable_database_is_one_line_without_the_url(clean_env, monkeypatch):
    # Nothing listens on port 1: the connection is refused at once.
    url = "postgresql+psycopg://broker:db-password-0451@127.0.0.1:1/broker"
    monkeypatch.setenv("BROKER_DATABASE_URL", url)
    result = _run("keys", "list")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("cannot reach the database: "), lines
    assert "db-password-0451" not in result.output
    assert isinstance(result.exception, SystemExit)


# --- serve's notes on how the workers will use the database ----------------------------------

ONE_WRITER_NOTE = "one worker runs its database writes one at a time"


@pytest.mark.parametrize(
    ("args", "dispatch", "noted"),
    [
        (["--workers", "1"], None, True),
        (["--workers", "2"], None, False),
        (["--workers", "1"], "threads", False),
    ],
    ids=["one-worker-inline", "two-workers", "one-worker-threads"],
)
def test_serve_on_postgresql_notes_a_single_inline_worker(
    clean_env, monkeypatch, args, dispatch, noted
):
    started: list[dict] = []
    monkeypatch.setenv("BROKER_DATABASE_URL", "postgresql+psycopg://broker@127.0.0.1:1/none")
    monkeypatch.delenv("BROKER_DB_DISPATCH", raising=False)
    if dispatch:
        monkeypatch.setenv("BROKER_DB_DISPATCH", dispatch)
    monkeypatch.setattr(
        serve_module, "open_database", lambda _settings: SimpleNamespace(dispose=lambda: None)
    )
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **options: started.append(options))
    result = _run("serve", "--no-migrate", *args)
    assert result.exit_code == 0, result.output
    assert started and started[0]["workers"] == int(args[1])
    # Several workers keep uvloop (faster for them on PostgreSQL); one runs on asyncio's
    # loop, which accepts every waiting connection at once (tests/test_serve_loop.py).
    assert started[0]["loop"] == ("asyncio" if args[1] == "1" else "auto")
    assert (ONE_WRITER_NOTE in result.stderr) is noted
    lines = [json.loads(line) for line in result.stderr.splitlines()]  # JSON only
    events = [line["event"] for line in lines if line["logger"] == "agent_broker.serve"]
    assert events == ["serve_workers_note"] * noted + ["serve_start"]


def test_an_unknown_dispatch_is_a_configuration_error(clean_env, monkeypatch):
    monkeypatch.setenv("BROKER_DB_DISPATCH", "fibers")
    result = _run("keys", "list")
    assert result.exit_code == 2
    assert "fibers" not in result.output
    assert result.stderr.splitlines() == [
        "configuration error: BROKER_DB_DISPATCH: Input should be 'inline' or 'threads'"
    ]


# --- values that used to pass the settings and fail on first use ---------------------------

RATE_NOTATION = 'must be a rate in the `limits` notation, e.g. "20/hour" or "5 per minute"'
ONE_RATE = 'takes one rate, e.g. "20/hour", not several separated by ";", "," or "|"'
LEVELS = "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL (in any case)"
KEY_FORMAT = (
    "must be 64 hex characters (the raw Ed25519 seed) or an unencrypted PEM PKCS#8 "
    "Ed25519 private key"
)
ESCROW_RULE = ["admin", "escrow-rule", str(uuid.uuid4()), "--outcome", "refund", "--reason", "r"]


@pytest.mark.parametrize(
    ("variable", "value", "problem", "args"),
    [
        ("BROKER_REGISTER_RATE_LIMIT", "garbage", RATE_NOTATION, ["serve"]),
        ("BROKER_INVOICE_RATE_LIMIT", "lots/hour", RATE_NOTATION, ["db", "upgrade"]),
        ("BROKER_VIOLATION_LIMIT", "10/hour;20/day", ONE_RATE, ["jobs", "run", "ledger-seal"]),
        ("BROKER_X402_ATTEMPT_RATE_LIMIT", "10/hour,20/day", ONE_RATE, ["db", "upgrade"]),
        ("BROKER_LOG_LEVEL", "bogus", LEVELS, ["serve"]),
        ("BROKER_SIGNING_KEY", "hunter2-signing-key", KEY_FORMAT, ["serve"]),
        ("BROKER_SIGNING_KEY", "ab" * 31, KEY_FORMAT, ESCROW_RULE),
        ("BROKER_CARD_SIGNING_KEY", "hunter2-card-key", KEY_FORMAT, ["serve"]),
    ],
    ids=[
        "rate-serve",
        "rate-db",
        "rates-semicolon-jobs",
        "rates-comma-db",
        "level-serve",
        "key-serve",
        "key-escrow-rule",
        "card-key-serve",
    ],
)
def test_a_value_the_service_cannot_use_stops_the_command_first(
    clean_env, monkeypatch, variable, value, problem, args
):
    started: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **options: started.append(options))
    monkeypatch.setenv(variable, value)
    result = _run(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"configuration error: {variable}: {problem}"]
    assert value not in result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    assert not started


def test_serve_starts_with_usable_limits_level_and_keys(clean_env, monkeypatch):
    started: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda *_a, **options: started.append(options))
    monkeypatch.setenv("BROKER_REGISTER_RATE_LIMIT", "5 per minute")
    monkeypatch.setenv("BROKER_LOG_LEVEL", "debug")
    monkeypatch.setenv("BROKER_SIGNING_KEY", "ab" * 32)
    monkeypatch.setenv("BROKER_CARD_SIGNING_KEY", "CD" * 32)
    result = _run("serve")
    assert result.exit_code == 0, result.output
    assert started and started[0]["log_level"] == "debug"
