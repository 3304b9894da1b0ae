"""The examples under docs/examples/ run as a user runs them, against a live server: one
real `agent-broker serve` process per module on a free loopback port and a SQLite
database of its own, started with the outbound settings for local testing (its CA file
in the examples' TLS directory, the example domains resolved to the local HTTPS ports the
domain proof and webhook examples serve on). Each example runs as a subprocess; a test
checks its exit status and what it printed (the deal it sealed, the event it verified,
the credit it was paid, ...). What the examples do is the service's own behaviour, which
the rest of the suite checks on both databases; here SQLite keeps the run short. The
`agent-broker` command the examples call is this checkout's, through a small wrapper."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.http import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
STARTUP_S = 60.0  # importing the app on a busy machine takes seconds
RUN_S = 120.0  # one example, at most
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

# Every example, with the test that runs it; local_tls.py and curl_helpers.sh are their
# helpers, not examples.
RUN_BY = {
    "first-session.sh": "test_first_session_with_curl",
    "escrow-deal.sh": "test_escrow_deal_with_curl",
    "client_session.py": "test_first_session_with_the_python_client",
    "cli_session.sh": "test_first_session_with_the_agent_cli",
    "mcp_stdio.py": "test_mcp_over_stdio",
    "a2a.sh": "test_a2a_with_curl",
    "a2a_client.py": "test_a2a_with_the_sdk_verifies_the_card",
    "webhook.py": "test_webhook_event_received_and_verified",
    "domain_proof.py": "test_domain_proof_against_a_local_https_site",
}
HELPERS = {"local_tls.py", "curl_helpers.sh", "README.md"}


@dataclass
class Broker:
    base: str
    env: dict[str, str]
    workdir: Path


@contextmanager
def serving(workdir: Path, database_url: str) -> Iterator[Broker]:
    """`agent-broker serve` on a free port and `database_url`, with the examples' settings;
    stopped when the block ends."""
    port, challenge_port, hook_port = free_port(), free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    tls_dir = workdir / "tls"
    command = workdir / "agent-broker"
    command.write_text(
        f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m agent_broker.cli "$@"\n'
    )
    command.chmod(command.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BROKER_", "EXAMPLE_"))}
    env.update(
        BROKER_DATABASE_URL=database_url,
        BROKER_VAR_DIR=str(workdir / "var"),
        BROKER_PUBLIC_BASE_URL=base,
        BROKER_LOG_LEVEL="WARNING",
        BROKER_JOBS_TICK_SECONDS="0.5",
        BROKER_REGISTER_RATE_LIMIT="1000/hour",
        BROKER_ALLOW_PRIVATE_FETCH="true",
        BROKER_OUTBOUND_CA_BUNDLE=str(tls_dir / "ca.pem"),
        BROKER_OUTBOUND_RESOLVE=(
            f"yourcompany.com=127.0.0.1:{challenge_port},"
            f"hooks.yourcompany.com=127.0.0.1:{hook_port}"
        ),
        BASE=base,
        AGENT_BROKER=str(command),
        EXAMPLE_TLS_DIR=str(tls_dir),
        EXAMPLE_CHALLENGE_PORT=str(challenge_port),
        EXAMPLE_HOOK_PORT=str(hook_port),
        EXAMPLE_WAIT_SECONDS="40",
        PYTHONPATH=str(ROOT),
    )
    with (workdir / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [str(command), "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + STARTUP_S
            while not _healthy(base):
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the server did not start:\n" + _tail(workdir / "server.log"))
                time.sleep(0.1)
            yield Broker(base, env, workdir)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    workdir = tmp_path_factory.mktemp("examples")
    with serving(workdir, f"sqlite:///{workdir / 'broker.db'}") as live:
        yield live


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:]


def run(broker: Broker, name: str) -> str:
    """Run an example as a user would; its output (standard output and error) when it
    exits 0, a failure showing that output and the server's log otherwise."""
    path = EXAMPLES / name
    argv = ["bash", str(path)] if name.endswith(".sh") else [sys.executable, str(path)]
    done = subprocess.run(
        argv,
        cwd=broker.workdir,
        env=broker.env,
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, (
        f"{name} exited {done.returncode}:\n{output}\n--- server log ---\n"
        + _tail(broker.workdir / "server.log")
    )
    return output


def sealed_deal(output: str) -> str:
    match = re.search(rf"^sealed deal ({UUID})$", output, re.M)
    assert match, output
    assert f"both parties rated deal {match[1]}" in output
    return match[1]


def test_every_example_is_run_here_and_listed_in_its_readme():
    present = {path.name for path in EXAMPLES.iterdir() if path.is_file()} - HELPERS
    assert present == set(RUN_BY), "each example needs a test here (RUN_BY)"
    assert all(callable(globals()[test]) for test in RUN_BY.values())
    listing = (EXAMPLES / "README.md").read_text()
    for name in present | {"local_tls.py"}:
        assert f"({name})" in listing, f"docs/examples/README.md does not link {name}"


def test_every_example_says_what_it_shows_and_how_to_run_it():
    for name in RUN_BY:
        head = (EXAMPLES / name).read_text()[:3000]
        assert "What it shows" in head and "make run" in head, name
        if name.endswith(".sh"):
            assert "set -euo pipefail" in head, name


def test_first_session_with_curl(broker):
    output = run(broker, "first-session.sh")
    sealed_deal(output)
    # 4,000 credits each: the seller paid the posting fee and its deal fee, the buyer its.
    assert "seller balance_micro=900000" in output
    assert "buyer balance_micro=1000000" in output
    assert '"counterparty_endpoint":"https://seller.yourcompany.com/deals/' in output


def test_escrow_deal_with_curl(broker):
    output = run(broker, "escrow-deal.sh")
    deal = re.search(rf"^sealed deal ({UUID})$", output, re.M)
    assert deal, output
    assert f"escrow released for deal {deal[1]}" in output
    # Opening held the deal fee and the opening price; sealed, the price is in escrow
    # and still counted as held.
    assert "buyer balance_micro=500000 held_micro=3000000" in output
    assert "buyer balance_micro=0 held_micro=2500000" in output
    assert '{"status":"held","amount_micro":2500000,"fee_bps":100' in output
    # Paid the price less 1% (25,000), after the posting fee and its deal fee.
    assert "seller balance_micro=2475000 held_micro=0" in output
    assert "buyer balance_micro=0 held_micro=0" in output


def test_the_curl_session_stops_at_a_refused_step(broker):
    # No operator credit (the command does nothing): posting is refused for want of funds.
    done = subprocess.run(
        ["bash", str(EXAMPLES / "first-session.sh")],
        cwd=broker.workdir,
        env={**broker.env, "AGENT_BROKER": "true"},
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "POST /v1/listings failed: {" in done.stderr
    assert '"reason":"insufficient_funds_self"' in done.stderr
    assert "sealed deal" not in done.stdout


def test_first_session_with_the_python_client(broker):
    output = run(broker, "client_session.py")
    sealed_deal(output)
    assert "the buyer's second offer was refused: out_of_turn" in output
    assert "seller balance_micro=900000" in output
    assert "buyer balance_micro=1000000" in output


def test_first_session_with_the_agent_cli(broker):
    output = run(broker, "cli_session.sh")
    sealed_deal(output)
    assert "the buyer's finalize was refused: 403 forbidden" in output


def test_mcp_over_stdio(broker):
    output = run(broker, "mcp_stdio.py")
    tools = re.search(r"^(\d+) tools: (.*)$", output, re.M)
    assert tools and int(tools[1]) >= 20, output
    assert {"register", "read_feed", "finalize"} <= set(tools[2].split(", "))
    registered = re.search(rf"^registered account ({UUID})$", output, re.M)
    assert registered, output
    # The second process acted for the key the first one registered.
    assert f"account {registered[1]} handle" in output
    assert "profile missing: []" in output


def test_a2a_with_curl(broker):
    output = run(broker, "a2a.sh")
    assert f'"url": "{broker.base}/a2a"' in output
    assert "role: ROLE_AGENT" in output
    assert '"code":-32009' in output


def test_a2a_with_the_sdk_verifies_the_card(broker):
    output = run(broker, "a2a_client.py")
    assert "the card of agent-broker" in output and "verifies with key" in output
    assert "the A2A answer begins:" in output


def test_webhook_event_received_and_verified(broker):
    output = run(broker, "webhook.py")
    opened = re.search(rf"^thread ({UUID});", output, re.M)
    assert opened, output
    assert re.search(r"^verified event \S+: thread\.opened$", output, re.M), output
    assert f"thread_id={opened[1]} " in output


def test_domain_proof_against_a_local_https_site(broker):
    output = run(broker, "domain_proof.py")
    assert "https://yourcompany.com/.well-known/svc-challenge.txt" in output
    assert 'the site answered: "GET /.well-known/svc-challenge.txt HTTP/1.1" 200' in output
    assert "verified=True granted=True" in output
    assert "balance_micro=10000000" in output
