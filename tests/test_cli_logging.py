"""The `agent-broker` commands log as the service does, JSON lines on standard error at
BROKER_LOG_LEVEL, so standard output carries only what a command prints (a `jobs run`
from cron is parsed). Each command runs in its own process: logging is configured once per
process, and an in-process run would inherit the test app's configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.settings import TEST_SECRET

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def broker(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Runs `agent-broker ARGS...` on a throwaway SQLite database, this checkout's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(
        BROKER_DATABASE_URL=f"sqlite:///{tmp_path / 'broker.db'}",
        BROKER_VAR_DIR=str(tmp_path / "var"),
        BROKER_KEY_HASH_SECRET=TEST_SECRET,
    )

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent_broker.cli", *args],
            cwd=tmp_path,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def _log_lines(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines()]  # fails on any other line


def test_jobs_run_prints_its_outcome_alone_and_logs_json_on_stderr(broker):
    upgraded = broker("db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout == "database is up to date\n"
    migrations = [line["event"] for line in _log_lines(upgraded.stderr)]
    assert any(event.startswith("Running upgrade ") for event in migrations), migrations
    assert not any(event.startswith("setup plugin ") for event in migrations)

    ran = broker("jobs", "run", "expire-holds")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "expire-holds: settled 0 lapsed holds\n"
    lines = _log_lines(ran.stderr)
    [job] = [line for line in lines if line["event"] == "job_ran"]
    assert job["job"] == "expire-holds" and job["outcome"] == "settled 0 lapsed holds"
    assert job["level"] == "info" and job["logger"] == "agent_broker.jobs"
    # The schema check's Alembic lines stay out; the key made for the run is logged.
    assert [line["event"] for line in lines] == ["signing key generated", "job_ran"]


def test_the_log_level_setting_applies_to_commands(broker):
    assert broker("db", "upgrade", BROKER_LOG_LEVEL="WARNING").stderr == ""
    ran = broker("jobs", "run", "expire-holds", BROKER_LOG_LEVEL="WARNING")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "expire-holds: settled 0 lapsed holds\n"
    assert ran.stderr == ""


def test_keys_rotate_logs_its_warning_on_stderr(broker, tmp_path):
    assert broker("db", "upgrade").returncode == 0
    first = broker("keys", "rotate")
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "var" / "signing-key.pem"
    key_file.chmod(0o644)

    rotated = broker("keys", "rotate")
    assert rotated.returncode == 0, rotated.stderr
    [printed] = rotated.stdout.splitlines()
    assert printed.startswith("signing key ") and printed.endswith(
        "restart the service to sign with it"
    )
    [warning] = _log_lines(rotated.stderr)
    assert warning["event"] == "signing key file is readable by others; chmod 600 it"
    assert warning["level"] == "warning" and warning["path"] == str(key_file)


def test_commands_that_need_no_configuration_still_run_without_one(broker):
    # A rejected setting stops only the commands that read the settings.
    listed = broker("jobs", "list", BROKER_DB_POOL_SIZE="pool-of-abc")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("expire-listings\t")
    assert listed.stderr == ""
    refused = broker("jobs", "run", "expire-holds", BROKER_DB_POOL_SIZE="pool-of-abc")
    assert refused.returncode == 2
    assert refused.stderr.startswith("configuration error: BROKER_DB_POOL_SIZE: ")
