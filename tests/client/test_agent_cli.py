"""`agent-broker-agent` (agent_broker_client.cli) against a live server, and `agent-broker
agent`, the same program under the server's command: JSON answers on standard output (a
table with --table), a refusal's problem document on standard error with exit status 1,
through a whole deal, domain proof, certification, credits and events; help on every
command and option; and the key, from the environment or a file, never printed."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from typer.testing import CliRunner

from agent_broker.cli import app as server_cli
from agent_broker.pricing import DEAL_FEE_MICRO, PACK_MICRO, POSTING_FEE_MICRO
from agent_broker_client import cli
from tests.support.accounts import fund
from tests.support.certification import PERIOD_MICRO, ROUTE, answer_liveness
from tests.support.domains import GRANT, serve_token
from tests.support.http import serving
from tests.support.market import LISTING

Run = Callable[..., Any]
CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


@pytest.fixture
def shell(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable:
    """run(base, *arguments, key=..., ok=...): the command's exit status and output, as
    `agent-broker-agent` gives them in a shell with BROKER_BASE_URL and BROKER_API_KEY."""

    def run(base: str, *arguments: str, key: str | None = None, ok: bool | None = True):  # type: ignore[no-untyped-def]
        monkeypatch.setenv("BROKER_BASE_URL", base)
        monkeypatch.setenv("BROKER_API_KEY", key or "")
        monkeypatch.delenv("BROKER_WALLET_KEY", raising=False)
        # Streams of the command's own: the live server in this process logs on stderr.
        out_stream, err_stream = io.StringIO(), io.StringIO()
        code = cli.main(list(arguments), out=out_stream, err=err_stream)
        out, err = out_stream.getvalue(), err_stream.getvalue()
        if ok is None:
            return code, out, err
        if ok:
            assert code == 0, (arguments, out, err)
            return json.loads(out)
        assert code == 1, (arguments, out, err)
        return json.loads(err)

    return run


def _agent(shell: Run, base: str, key: str | None = None) -> Run:
    return lambda *arguments, ok=True: shell(base, *arguments, key=key, ok=ok)


def _trading_shell(shell: Run, base: str, name: str) -> tuple[dict[str, Any], Run]:
    made = _agent(shell, base)("register")
    agent = _agent(shell, base, made["api_key"])
    assert agent("contact", name, "ops@agents.dev") == {"ok": True}
    agent("route", f"https://agents.dev/{name}/", "--binding", "JSONRPC")
    return made, agent


POST = (
    "post",
    "--title",
    LISTING["title"],
    "--category",
    LISTING["category"],
    "--type",
    LISTING["listing_type"],
    "--body",
    LISTING["body"],
)


def test_a_whole_deal_from_the_shell(app, live_server, shell):
    seller_made, seller = _trading_shell(shell, live_server, "seller")
    buyer_made, buyer = _trading_shell(shell, live_server, "buyer")
    refused = seller(*POST, ok=False)
    assert refused["reason"] == "insufficient_funds_self"
    for made in (seller_made, buyer_made):
        fund(app, made["account_id"], POSTING_FEE_MICRO + DEAL_FEE_MICRO, real_money=True)
    listing = seller(*POST, "--price-micro", "2500000")
    found = buyer("feed", "--q", "deduplicate", "--sort", "price_desc")
    assert [item["id"] for item in found["listings"]] == [listing["id"]]
    assert buyer("listing", listing["id"])["body"] == LISTING["body"]
    thread = buyer("open", listing["id"], "2 days")
    seller("offer", thread["id"], "3 days")
    buyer("offer", thread["id"], "3 days, agreed")
    sealed = seller("finalize", thread["id"])
    assert buyer("deal", sealed["id"])["id"] == sealed["id"]
    assert buyer("rate", sealed["id"], "5", "--delivered") == {"ok": True}
    assert seller("account")["balance_micro"] == 0
    handle = seller("account")["handle"]
    assert _agent(shell, live_server)("reputation", handle)["handle"] == handle
    missing = buyer("thread", "0b4e7c1e-2f0a-4d8e-9a51-6f2d3c4b5a69", ok=False)
    assert missing["reason"] == "not_found"
    # The events of the deal, oldest first, one JSON object a line, then the end.
    # (On PostgreSQL an event is read once every older writing transaction on the server
    # has ended: under a busy server it may take a moment.)
    deadline = time.monotonic() + 20
    while True:
        code, out, _err = shell(live_server, "events", key=seller_made["api_key"], ok=None)
        events = [json.loads(line) for line in out.splitlines()]
        if {"thread.opened", "deal.sealed"} <= {e["type"] for e in events}:
            break
        assert code == 0 and time.monotonic() < deadline, out
        time.sleep(0.2)
    # With --table: the same events as rows under one header.
    code, out, _err = shell(live_server, "--table", "events", key=seller_made["api_key"], ok=None)
    header, rule, *rows = out.splitlines()
    assert code == 0 and header.split() == cli.EVENT_COLUMNS and set(rule) <= {"-", " "}
    assert [row.split()[:2] for row in rows] == [[e["id"], e["type"]] for e in events]
    # --follow and --stream print the same events, then wait for more: stopped by a signal.
    for how in ("--follow", "--stream"):
        followed = _following(live_server, seller_made["api_key"], how, len(events))
        assert followed == [json.dumps(event) for event in events], how


def _following(base: str, key: str, how: str, count: int) -> list[str]:
    """The first `count` lines `agent-broker-agent events HOW` prints, as a process of
    its own; then it is interrupted (it never ends by itself)."""
    env = {**os.environ, "BROKER_BASE_URL": base, "BROKER_API_KEY": key}
    env["PYTHONPATH"] = os.pathsep.join([str(CLIENT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "agent_broker_client.cli", "events", how]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as running:
        try:
            lines = [running.stdout.readline().rstrip("\n") for _ in range(count)]
            time.sleep(0.5)
            assert running.poll() is None  # still waiting for new events
        finally:
            running.send_signal(signal.SIGINT)
            assert running.wait(timeout=30) == 130
    return lines


def test_tables_for_a_person_json_by_default(live_server, shell):
    made, agent = _trading_shell(shell, live_server, "seller")
    code, out, _err = shell(live_server, "--table", "account", key=made["api_key"], ok=None)
    assert code == 0
    lines = dict(line.split(None, 1) for line in out.splitlines() if " " in line.strip())
    assert lines["handle"] == agent("account")["handle"]  # JSON without --table
    assert lines["balance_micro"] == "0"
    code, out, _err = shell(live_server, "--table", "feed", key=made["api_key"], ok=None)
    assert code == 0 and out.splitlines()[0].split() == ["listings", "[]"]


def test_a_list_of_objects_is_rows_and_an_object_key_values() -> None:
    from agent_broker_client import table

    page = {
        "listings": [{"id": "a", "price_micro": 5, "seller": {"handle": "x"}}, {"id": "bb"}],
        "next": None,
        "sealed": True,
        "reveal": {"contact": {"name": "Ops"}},
    }
    assert table.render(page).splitlines() == [
        "next",
        "sealed               yes",
        "reveal.contact.name  Ops",
        "",
        "listings:",
        "id  price_micro  seller",
        "--  -----------  --------------",
        'a   5            {"handle":"x"}',
        "bb",
    ]
    assert table.render([]) == "(none)"
    assert len(table.cell("x" * 500)) == table.CELL_WIDTH


def _arguments_for(command: argparse.ArgumentParser) -> list[str]:
    """Placeholder arguments that parse: each positional and required option a value."""
    values: list[str] = []
    for action in command._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        value = "1" if action.type is int else (action.choices or ["x"])[0]
        if not action.option_strings:
            values.append(str(value))
        elif action.required:
            values += [action.option_strings[0], str(value)]
    return values


def _subcommands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [commands] = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_command_and_option_has_help(shell, capsys):
    top = cli.parser()
    subcommands = _subcommands(top)
    assert set(subcommands) == set(cli.COMMANDS)
    for parser in (top, *subcommands.values()):
        assert parser.description and parser.description.strip()
        for action in parser._actions:
            assert action.help and action.help.strip(), (parser.prog, action.dest)
    # And `COMMAND --help` shows it: the command's description, each option's help.
    for name, command in subcommands.items():
        with pytest.raises(SystemExit) as shown:
            cli.main([name, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert shown.value.code == 0
        assert " ".join(command.description.split()) in out
        for action in command._actions:
            assert " ".join(action.help.split()[:3]) in out, (name, action.dest)


def test_the_key_is_never_printed(app, live_server, shell, tmp_path: Path, capsys):
    made = _agent(shell, live_server)("register")
    key = made["api_key"]
    wallet = Account.create().key.hex()
    key_file, wallet_file = tmp_path / "key", tmp_path / "wallet"
    key_file.write_text(key + "\n")
    wallet_file.write_text(wallet)
    subcommands = _subcommands(cli.parser())
    seen = []
    for name, command in subcommands.items():
        arguments = _arguments_for(command)
        if "--wallet-key-file" in command._option_string_actions:
            arguments += ["--wallet-key-file", str(wallet_file)]
        for how in ("environment", "file", "help"):
            if how == "help":
                with pytest.raises(SystemExit):
                    shell(live_server, name, "--help", key=key, ok=None)
                out, err = capsys.readouterr()
            elif how == "file":
                _code, out, err = shell(
                    live_server, "--key-file", str(key_file), name, *arguments, ok=None
                )
            else:
                _code, out, err = shell(live_server, name, *arguments, key=key, ok=None)
            assert key not in out + err and wallet not in out + err, (name, how)
            assert wallet.removeprefix("0x") not in out + err, (name, how)
            seen.append((name, how, bool(out or err)))
    # Every command answered something (events: none yet, so nothing).
    assert [(name, how) for name, how, printed in seen if not printed] == [
        ("events", "environment"),
        ("events", "file"),
    ]
    # The key file is read: the account is the file's key's.
    assert (
        shell(live_server, "--key-file", str(key_file), "account")["account_id"]
        == (made["account_id"])
    )
    unreadable = shell(live_server, "--key-file", str(tmp_path / "none"), "account", ok=False)
    assert str(tmp_path / "none") in unreadable["detail"]


def test_domain_proof_and_certification_from_the_shell(make_domain_app, challenge_server, shell):
    app = make_domain_app()
    with _serving(app) as base:
        made = _agent(shell, base)("register")
        agent = _agent(shell, base, made["api_key"])
        assert agent("domain", ok=False)["reason"] == "missing_deal_route_self"
        agent("route", ROUTE)
        challenge = agent("domain")
        assert challenge["domain"] == "agents.dev" and not challenge["verified"]
        assert agent("domain-verify", ok=False)["check"] == "status"
        serve_token(challenge_server, challenge["token"])
        proved = agent("domain-verify")
        assert proved["granted"] and proved["granted_micro"] == GRANT
        assert agent("certification")["subscribed"] is False
        refused = agent("certification-subscribe", ok=False)
        assert refused["reason"] == "certification_unfunded"
        answer_liveness(challenge_server)
        assert agent("certification-test")["last_test"]["passed"] is True
        fund(app, made["account_id"], PERIOD_MICRO, real_money=True)
        subscribed = agent("certification-subscribe")
        assert subscribed["subscribed"] and subscribed["renew"]
        cancelled = agent("certification-cancel")
        assert cancelled["subscribed"] and not cancelled["renew"]


def test_credits_through_a_processor_print_the_invoice(live_server, shell):
    made, agent = _trading_shell(shell, live_server, "buyer")
    invoice = agent("credits", "--packs", "2", "--processor", "processor_a")
    assert invoice["credits_to_add"] == 2000 and invoice["amount_micro"] == 2 * PACK_MICRO
    assert agent("credits", "--packs", "0", ok=False)["reason"] == "invalid_input"


@pytest.fixture
def x402_app(make_app, x402_settings):
    return make_app(**x402_settings)


def test_credits_with_a_wallet_and_the_key_it_recovers(
    x402_app, facilitator, shell, tmp_path: Path
):
    wallet_file = tmp_path / "wallet"
    wallet_file.write_text(Account.create().key.hex())
    with _serving(x402_app) as base:
        paid = shell(base, "credits-x402", "--wallet-key-file", str(wallet_file))
        assert paid["paid"] and paid["new_account"]["api_key"].startswith("ab_")
        opened = paid["new_account"]
        buyer = _agent(shell, base, opened["api_key"])
        assert buyer("account")["balance_micro"] == PACK_MICRO
        # Paid again: the same account, no new key.
        again = shell(base, "credits-x402", "--wallet-key-file", str(wallet_file))
        assert again["paid"] and not again.get("new_account") and again["receipt"]
        assert buyer("account")["balance_micro"] == 2 * PACK_MICRO
        recovered = shell(
            base, "recover-key", "--wallet-key-file", str(wallet_file), "--domain", "broker.test"
        )
        assert recovered["account_id"] == opened["account_id"]
        assert buyer("account", ok=False)["reason"] == "unauthorized"
    assert len(facilitator.settled) == 2


def test_without_the_x402_extra_a_wallet_command_says_how_to_get_it(
    live_server, shell, monkeypatch, tmp_path: Path
):
    wallet_file = tmp_path / "wallet"
    wallet_file.write_text(Account.create().key.hex())
    monkeypatch.setitem(__import__("sys").modules, "x402", None)  # as if not installed
    for command in ("credits-x402", "recover-key"):
        refused = shell(live_server, command, "--wallet-key-file", str(wallet_file), ok=False)
        assert 'pip install "agent-broker-client[x402]"' in refused["detail"]
    no_wallet = shell(live_server, "credits-x402", ok=False)
    assert "--wallet-key-file" in no_wallet["detail"]


def test_agent_broker_agent_is_the_same_program(live_server, shell):
    """`agent-broker agent ARGS` runs `agent-broker-agent ARGS`: the same output."""
    made, agent = _trading_shell(shell, live_server, "seller")
    env = {"BROKER_BASE_URL": live_server, "BROKER_API_KEY": made["api_key"]}
    for arguments in (["account"], ["--table", "profile"], ["feed", "--limit", "1"]):
        through_server = CliRunner().invoke(server_cli, ["agent", *arguments], env=env)
        assert through_server.exit_code == 0, through_server.output
        code, out, _err = shell(live_server, *arguments, key=made["api_key"], ok=None)
        assert code == 0 and through_server.stdout == out
    refused = CliRunner().invoke(server_cli, ["agent", "thread", "nope"], env=env)
    assert refused.exit_code == 1 and json.loads(refused.stderr)["status"] in (400, 404)
    shown = CliRunner().invoke(server_cli, ["agent", "--help"], env=env)
    assert shown.exit_code == 0
    assert "usage: agent-broker agent" in shown.stdout and "certification-subscribe" in shown.stdout
    assert made["api_key"] not in shown.stdout


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """An app of the test's own on a loopback port, as live_server serves the default one."""
    with serving(app) as (base, _port):
        yield base
