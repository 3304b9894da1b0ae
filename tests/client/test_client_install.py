"""The standalone client installs alone: `pip install ./clients/python` into an empty
virtual environment (no system site-packages) brings httpx and pydantic, and nothing of
the server (no agent_broker, FastAPI, SQLAlchemy...); from that environment alone, a
whole deal runs against a live server, through the client and through
`agent-broker-agent`.

pip installs from the package sources this machine's pip configuration names, the same
ones the repository's own environment is installed from (`make`, Makefile); nothing else
is reached. Building the environment takes a while, so the module is `serial` (`make
test` runs it after the parallel part)."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

from tests.support.accounts import fund
from tests.support.market import FUNDS, LISTING

pytestmark = pytest.mark.serial

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
SERVER_PACKAGES = ("agent_broker", "fastapi", "starlette", "sqlalchemy", "uvicorn", "alembic")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("client-venv") / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(home)
    installed = subprocess.run(
        [str(home / "bin" / "python"), "-m", "pip", "install", "--quiet", str(CLIENT)],
        capture_output=True,
        text=True,
        env=_clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
        cwd=home.parent,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr[-4000:]
    return home


def _python(home: Path, code: str, *args: str, **env: str) -> str:
    ran = subprocess.run(
        [str(home / "bin" / "python"), "-c", code, *args],
        capture_output=True,
        text=True,
        env=_clean_env(**env),
        cwd=home.parent,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    return ran.stdout


def _agent(home: Path, *args: str, key: str | None = None, base: str) -> dict:
    env = _clean_env(BROKER_BASE_URL=base)
    env.pop("BROKER_API_KEY", None)
    if key:
        env["BROKER_API_KEY"] = key
    ran = subprocess.run(
        [str(home / "bin" / "agent-broker-agent"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
    )
    assert ran.returncode == 0, (args, ran.stderr[-2000:])
    return json.loads(ran.stdout)


def test_the_client_installs_without_any_server_package(client_venv: Path) -> None:
    found = json.loads(
        _python(
            client_venv,
            "import importlib.util, json, sys\n"
            "import agent_broker_client\n"
            "from agent_broker_client import AsyncClient, Client\n"
            "names = sys.argv[1:]\n"
            "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in names}))",
            *SERVER_PACKAGES,
            "httpx",
            "pydantic",
        )
    )
    assert found == {**dict.fromkeys(SERVER_PACKAGES, False), "httpx": True, "pydantic": True}
    # Without the x402 extra, a wallet is refused with the way to get it.
    message = _python(
        client_venv,
        "from agent_broker_client.payment import wallet_address\n"
        "try:\n    wallet_address('0x' + '11' * 32)\n"
        "except ImportError as missing:\n    print(missing)",
    )
    assert 'pip install "agent-broker-client[x402]"' in message


def test_every_command_of_the_cli_has_help(client_venv: Path) -> None:
    from agent_broker_client import cli

    script = str(client_venv / "bin" / "agent-broker-agent")
    top = subprocess.run([script, "--help"], capture_output=True, text=True, env=_clean_env())
    assert top.returncode == 0
    for name, (text, _arguments, _action) in cli.COMMANDS.items():
        assert text and name in top.stdout
        shown = subprocess.run(
            [script, name, "--help"], capture_output=True, text=True, env=_clean_env()
        )
        assert shown.returncode == 0 and text.split(" (")[0] in " ".join(shown.stdout.split())


DEAL = """
import json, sys
from agent_broker_client import Client, Conflict

base, step = sys.argv[1], sys.argv[2]
if step == "register":
    keys = {}
    for name in ("seller", "buyer"):
        with Client(base) as agent:
            made = agent.register()
            agent.set_contact(name, "ops@agents.dev")
            agent.set_route(f"https://agents.dev/{name}/", "JSONRPC")
            keys[name] = {"key": agent.api_key, "account": str(made.account_id)}
    print(json.dumps(keys))
else:
    keys, listing = json.loads(sys.argv[3]), json.loads(sys.argv[4])
    with Client(base, keys["seller"]) as seller, Client(base, keys["buyer"]) as buyer:
        posted = seller.post_listing(**listing)
        assert [item.id for item in buyer.feed(q="deduplicate").listings] == [posted.id]
        thread = buyer.open_thread(str(posted.id), "2 days, as listed")
        try:
            buyer.offer(str(thread.id), "3 days")
        except Conflict as refused:
            assert refused.reason == "out_of_turn"
        seller.offer(str(thread.id), "3 days")
        buyer.offer(str(thread.id), "3 days, agreed")
        deal = seller.finalize(str(thread.id))
        buyer.rate(str(deal.id), 5, delivered=True)
        print(json.dumps({"deal": str(deal.id), "seen": str(buyer.deal(str(deal.id)).id)}))
"""


def test_a_whole_deal_from_the_clients_environment_alone(client_venv: Path, app, live_server):
    keys = json.loads(_python(client_venv, DEAL, live_server, "register"))
    for party in keys.values():
        fund(app, party["account"], 2 * FUNDS, real_money=True)
    plain = {name: party["key"] for name, party in keys.items()}
    done = json.loads(
        _python(client_venv, DEAL, live_server, "deal", json.dumps(plain), json.dumps(LISTING))
    )
    assert done["deal"] == done["seen"]

    # The same through the command, each party with its own key from the environment.
    seller, buyer = plain["seller"], plain["buyer"]
    listing = _agent(
        client_venv,
        "post",
        "--title", LISTING["title"],
        "--category", LISTING["category"],
        "--type", LISTING["listing_type"],
        "--body", LISTING["body"],
        "--price-micro", str(LISTING["price_micro"]),
        key=seller,
        base=live_server,
    )  # fmt: skip
    thread = _agent(client_venv, "open", listing["id"], "2 days", key=buyer, base=live_server)
    _agent(client_venv, "offer", thread["id"], "3 days", key=seller, base=live_server)
    _agent(client_venv, "offer", thread["id"], "3 days, agreed", key=buyer, base=live_server)
    deal = _agent(client_venv, "finalize", thread["id"], key=seller, base=live_server)
    assert _agent(client_venv, "deal", deal["id"], key=buyer, base=live_server)["id"] == deal["id"]
    assert _agent(client_venv, "rate", deal["id"], "5", "--delivered", key=buyer, base=live_server)
    events = subprocess.run(
        [str(client_venv / "bin" / "agent-broker-agent"), "events"],
        capture_output=True,
        text=True,
        env=_clean_env(BROKER_BASE_URL=live_server, BROKER_API_KEY=seller),
        timeout=60,
    )
    assert events.returncode == 0, events.stderr
    types = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    assert "deal.sealed" in types

    # A readable table, with the client alone.
    script = str(client_venv / "bin" / "agent-broker-agent")
    shown = subprocess.run(
        [script, "--table", "deal", deal["id"]],
        capture_output=True,
        text=True,
        env=_clean_env(BROKER_BASE_URL=live_server, BROKER_API_KEY=buyer),
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert ["id", deal["id"]] in [line.split() for line in shown.stdout.splitlines()]
    assert buyer not in shown.stdout + shown.stderr

    # Without the x402 extra, paying with a wallet says how to get it; nothing is sent.
    wallet = client_venv.parent / "wallet"
    wallet.write_text("0x" + "11" * 32)
    refused = subprocess.run(
        [script, "credits-x402", "--wallet-key-file", str(wallet)],
        capture_output=True,
        text=True,
        env=_clean_env(BROKER_BASE_URL=live_server),
        timeout=60,
    )
    assert refused.returncode == 1 and refused.stdout == ""
    assert 'pip install "agent-broker-client[x402]"' in json.loads(refused.stderr)["detail"]
    assert "11" * 32 not in refused.stderr
