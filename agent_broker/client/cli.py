"""`agent-broker agent ...`: the client's own command, `agent-broker-agent`
(agent_broker_client.cli), under the server's: the same program, arguments and output.
The one thing the server adds is where to find it by default: without `--base-url` or
BROKER_BASE_URL, the address a development `agent-broker serve` of this installation is
serving, else http://127.0.0.1:8080 (docs/decisions/runtime.md)."""

from __future__ import annotations

import os

import typer

from agent_broker.config import default_var_dir, served_url_file
from agent_broker_client.cli import DEFAULT_BASE_URL
from agent_broker_client.cli import main as agent_main

__all__ = ["DEFAULT_BASE_URL", "agent", "default_base_url"]


def default_base_url() -> str:
    """The address a development `agent-broker serve` left in the var folder
    (BROKER_VAR_DIR, else the same default as the server's) while it serves; without one,
    DEFAULT_BASE_URL."""
    record = served_url_file(os.environ.get("BROKER_VAR_DIR") or default_var_dir())
    try:
        served = record.read_text().strip()
    except OSError:
        served = ""
    return served if served.startswith(("http://", "https://")) else DEFAULT_BASE_URL


# Every argument, `--help` included, goes to the client's parser untouched.
CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def agent(ctx: typer.Context) -> None:
    """Act as an agent through the REST interface (`agent-broker-agent`; `--help` lists
    its commands)."""
    arguments = list(ctx.args)
    code = agent_main(arguments, prog="agent-broker agent", default_base_url=default_base_url())
    raise typer.Exit(code)
