"""Where the service answers and which files it uses, whatever the port and the working
directory: `make run HOST=... PORT=...` reaches `serve`; in development an unset
BROKER_PUBLIC_BASE_URL follows the address served (every absolute link, and the default
of `agent-broker agent`); the default SQLite file is the same from any folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from typer.testing import CliRunner

from agent_broker.cli import app as cli
from agent_broker.cli.serve import served_base_url
from agent_broker.client.cli import DEFAULT_BASE_URL, default_base_url
from agent_broker.config import Settings, default_var_dir, served_url_file
from tests.support.http import free_port
from tests.support.settings import TEST_SECRET

ROOT = Path(__file__).resolve().parents[1]
STARTUP_S = 60.0


def _environment(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env.update(values)
    return env


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:9001"),
        ("0.0.0.0", "http://127.0.0.1:9001"),
        ("::", "http://localhost:9001"),
        ("::1", "http://[::1]:9001"),
        ("[::1]", "http://[::1]:9001"),
        ("10.1.2.3", "http://10.1.2.3:9001"),
        ("broker.internal", "http://broker.internal:9001"),
    ],
)
def test_the_served_address_as_clients_reach_it(host: str, url: str) -> None:
    assert served_base_url(host, 9001) == url


def _wait_until_healthy(proc: subprocess.Popen, base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"serve exited with status {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail("serve did not answer in time")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_on_another_port_links_to_that_port_in_development(
    tmp_path: Path, workers: str
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    var = tmp_path / "var"
    env = _environment(
        BROKER_DATABASE_URL=f"sqlite:///{tmp_path / 'broker.db'}",
        BROKER_VAR_DIR=str(var),
        BROKER_KEY_HASH_SECRET=TEST_SECRET,
        BROKER_JOBS_ENABLED="false",
    )
    log = tmp_path / "serve.log"
    # With two workers, each reads its settings from the environment serve hands down.
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_broker.cli", "serve", "--port", str(port)]
        + ["--workers", workers],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    try:
        _wait_until_healthy(proc, base, log)
        problem = httpx.get(f"{base}/v1/account", timeout=10).json()
        assert problem["type"] == f"{base}/problems/{problem['reason']}"
        robots = httpx.get(f"{base}/robots.txt", timeout=10).text
        assert f"{base}/llms.txt" in robots
        assert f"{base}/.well-known/agent-card.json" in robots
        card = httpx.get(f"{base}/.well-known/agent-card.json", timeout=10).json()
        assert f"{base}/openapi.json" in json.dumps(card)
        assert "127.0.0.1:8080" not in json.dumps(card)
        status = httpx.get(f"{base}/status.json", timeout=10).json()
        assert status["page"]["url"] == base
        guide = httpx.get(f"{base}/llms.txt", timeout=10).text
        assert base in guide and "127.0.0.1:8080" not in guide
        # `agent-broker agent` finds the address without being told.
        assert served_url_file(str(var)).read_text().strip() == base
        registered = CliRunner().invoke(
            cli, ["agent", "register"], env={"BROKER_VAR_DIR": str(var), "BROKER_BASE_URL": ""}
        )
        assert registered.exit_code == 0, registered.output
        assert json.loads(registered.stdout)["api_key"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    # (uvicorn's supervisor of several workers writes a few plain lines of its own)
    lines = log.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    [start] = [event for event in events if event["event"] == "serve_start"]
    assert start["public_base_url"] == base
    assert start["database"] == str(tmp_path / "broker.db")
    assert not served_url_file(str(var)).exists()  # gone with the server


def test_a_configured_public_base_url_stands(monkeypatch, tmp_path: Path) -> None:
    """serve keeps a configured address, and outside development it never derives one."""
    import uvicorn

    from agent_broker.cli import serve as serve_module

    seen: list[str | None] = []
    monkeypatch.setattr(
        uvicorn, "run", lambda *_a, **_k: seen.append(os.environ.get("BROKER_PUBLIC_BASE_URL"))
    )
    monkeypatch.setattr(
        serve_module, "open_database", lambda _settings: SimpleNamespace(dispose=lambda: None)
    )
    monkeypatch.setenv("BROKER_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("BROKER_KEY_HASH_SECRET", TEST_SECRET)
    monkeypatch.setenv("BROKER_DATABASE_URL", f"sqlite:///{tmp_path / 'broker.db'}")
    monkeypatch.setenv("BROKER_ENV", "staging")
    monkeypatch.setenv("BROKER_PUBLIC_BASE_URL", "x")
    monkeypatch.delenv("BROKER_PUBLIC_BASE_URL")  # restored to unset after the test
    assert CliRunner().invoke(cli, ["serve", "--no-migrate", "--port", "9002"]).exit_code == 0
    monkeypatch.setenv("BROKER_ENV", "development")
    monkeypatch.setenv("BROKER_PUBLIC_BASE_URL", "https://broker.example")
    assert CliRunner().invoke(cli, ["serve", "--no-migrate", "--port", "9003"]).exit_code == 0
    monkeypatch.delenv("BROKER_PUBLIC_BASE_URL")
    assert CliRunner().invoke(cli, ["serve", "--no-migrate", "--port", "9004"]).exit_code == 0
    assert seen == [None, "https://broker.example", "http://127.0.0.1:9004"]
    assert "BROKER_PUBLIC_BASE_URL" not in os.environ  # put back once serving ends


def test_the_agent_command_defaults_to_the_served_address(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BROKER_VAR_DIR", str(tmp_path))
    assert default_base_url() == DEFAULT_BASE_URL  # nothing served
    served_url_file(str(tmp_path)).write_text("http://127.0.0.1:9005\n")
    assert default_base_url() == "http://127.0.0.1:9005"


def test_the_default_database_is_the_same_from_any_folder(monkeypatch, tmp_path: Path) -> None:
    show = "from agent_broker.config import Settings; s = Settings(); print(s.database_url)"
    env = _environment()
    answers = set()
    for folder in (tmp_path, ROOT / "docs"):
        run = subprocess.run(
            [sys.executable, "-c", show], cwd=folder, env=env, capture_output=True, check=True
        )
        answers.add(run.stdout.decode().strip())
    for name in ("BROKER_DATABASE_URL", "BROKER_VAR_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    expected = f"sqlite:///{Path(default_var_dir()) / 'broker.db'}"
    assert answers == {expected} == {Settings().database_url}
    # Run from a source checkout, that is the checkout's var folder (`make clean` empties it).
    assert default_var_dir() == str(ROOT / "var")


def test_a_relative_var_dir_is_made_absolute(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(var_dir="state", database_url="")
    assert settings.var_dir == str(tmp_path / "state")
    assert settings.database_url == f"sqlite:///{tmp_path / 'state' / 'broker.db'}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_serves_on_the_host_and_port_given() -> None:
    def dry_run(*arguments: str, **env: str) -> str:
        run = subprocess.run(
            ["make", "-n", "-B", *arguments],
            cwd=ROOT,
            env={**os.environ, **env},
            capture_output=True,
            check=True,
        )
        return run.stdout.decode()

    given = dry_run("run", "HOST=0.0.0.0", "PORT=9123")
    assert ".venv/bin/agent-broker serve --host 0.0.0.0 --port 9123" in given
    # Only the service's own dependencies; the dev extras are the tests' and linters'.
    assert "pip install --quiet -e .\n" in given and "[dev]" not in given
    default = dry_run("run", HOST="some-host-name")  # the environment's HOST is not taken
    assert ".venv/bin/agent-broker serve --host 127.0.0.1 --port 8080" in default
    assert '-e ".[dev]"' in dry_run("test")
