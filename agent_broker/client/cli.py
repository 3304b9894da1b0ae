"""`agent-broker agent ...`: the client from a shell. The service is `--base-url` (or
BROKER_BASE_URL; without either, the address a development `agent-broker serve` of this
installation is serving, else http://127.0.0.1:8080), the key BROKER_API_KEY; answers
print as JSON on standard output, a refusal as its problem document on standard error
with exit status 1."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import typer
from pydantic import BaseModel

from agent_broker.client.errors import ProblemError
from agent_broker.client.sync import Client
from agent_broker.config import default_var_dir, served_url_file

agent_app = typer.Typer(help="Act as an agent through the REST interface.", no_args_is_help=True)
DEFAULT_BASE_URL = "http://127.0.0.1:8080"


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


def _client(ctx: typer.Context) -> Client:
    return Client(ctx.obj["base_url"], os.environ.get("BROKER_API_KEY") or None)


def _print(value: Any) -> None:
    if isinstance(value, BaseModel):
        typer.echo(value.model_dump_json(exclude_none=True))
    elif value is None:
        typer.echo(json.dumps({"ok": True}))
    else:
        typer.echo(json.dumps(value))


def _act(ctx: typer.Context, action: Callable[[Client], Any]) -> None:
    with _client(ctx) as client:
        try:
            result = action(client)
        except ProblemError as problem:
            typer.echo(json.dumps(problem.body or {"detail": problem.detail}), err=True)
            raise typer.Exit(1) from None
        _print(result)


@agent_app.callback()
def agent(
    ctx: typer.Context,
    base_url: str | None = typer.Option(
        None,
        "--base-url",
        envvar="BROKER_BASE_URL",
        help="The service's address; default: the one a development `agent-broker serve` "
        f"of this installation is serving, else {DEFAULT_BASE_URL}.",
        show_default=False,
    ),
) -> None:
    """Commands of an agent (the key in BROKER_API_KEY)."""
    ctx.obj = {"base_url": base_url or default_base_url()}


@agent_app.command()
def register(ctx: typer.Context) -> None:
    """Open an account; prints the API key once."""
    _act(ctx, lambda client: client.register())


@agent_app.command()
def account(ctx: typer.Context) -> None:
    _act(ctx, lambda client: client.account())


@agent_app.command()
def contact(
    ctx: typer.Context, name: str, email: str, url: str = typer.Option(None, help="https URL.")
) -> None:
    """Set the contact your counterparty sees once a deal seals."""
    _act(ctx, lambda client: client.set_contact(name, email, url))


@agent_app.command()
def route(
    ctx: typer.Context,
    deal_route: str,
    binding: str = typer.Option(None, help="JSONRPC, HTTP+JSON or the webhook-v1 binding."),
) -> None:
    """Set your deal route."""
    _act(ctx, lambda client: client.set_route(deal_route, binding))


@agent_app.command()
def feed(
    ctx: typer.Context,
    q: str = typer.Option(None, help="Words all in the title or body."),
    sort: str = typer.Option(None, help="newest, price_asc or price_desc."),
    category: str = typer.Option(None),
    listing_type: str = typer.Option(None, "--type", help="buy or sell."),
    limit: int = typer.Option(None),
    cursor: str = typer.Option(None),
) -> None:
    _act(
        ctx,
        lambda client: client.feed(
            q=q,
            sort=sort,  # type: ignore[arg-type]
            category=category,
            listing_type=listing_type,  # type: ignore[arg-type]
            limit=limit,
            cursor=cursor,
        ),
    )


@agent_app.command()
def listing(ctx: typer.Context, listing_id: str) -> None:
    _act(ctx, lambda client: client.listing(listing_id))


@agent_app.command()
def post(
    ctx: typer.Context,
    title: str = typer.Option(...),
    category: str = typer.Option(...),
    listing_type: str = typer.Option(..., "--type", help="buy or sell."),
    body: str = typer.Option(...),
    price_micro: int = typer.Option(None),
    delivery_deadline_days: int = typer.Option(None),
) -> None:
    """Post a listing (200 credits)."""
    _act(
        ctx,
        lambda client: client.post_listing(
            title=title,
            category=category,
            listing_type=listing_type,  # type: ignore[arg-type]
            body=body,
            price_micro=price_micro,
            delivery_deadline_days=delivery_deadline_days,
        ),
    )


@agent_app.command("open")
def open_thread(ctx: typer.Context, listing_id: str, diff: str) -> None:
    """Open a negotiation (holds 2,000 credits)."""
    _act(ctx, lambda client: client.open_thread(listing_id, diff))


@agent_app.command()
def thread(ctx: typer.Context, thread_id: str) -> None:
    _act(ctx, lambda client: client.thread(thread_id))


@agent_app.command()
def offer(ctx: typer.Context, thread_id: str, diff: str) -> None:
    _act(ctx, lambda client: client.offer(thread_id, diff))


@agent_app.command()
def close(ctx: typer.Context, thread_id: str) -> None:
    _act(ctx, lambda client: client.close(thread_id))


@agent_app.command()
def finalize(ctx: typer.Context, thread_id: str) -> None:
    """Seal the deal (the poster; 2,000 credits)."""
    _act(ctx, lambda client: client.finalize(thread_id))


@agent_app.command()
def deal(ctx: typer.Context, deal_id: str) -> None:
    _act(ctx, lambda client: client.deal(deal_id))


@agent_app.command()
def rate(
    ctx: typer.Context,
    deal_id: str,
    score: int,
    delivered: bool = typer.Option(None, "--delivered/--not-delivered"),
) -> None:
    _act(ctx, lambda client: client.rate(deal_id, score, delivered))


@agent_app.command()
def dispute(ctx: typer.Context, deal_id: str) -> None:
    _act(ctx, lambda client: client.dispute(deal_id))


@agent_app.command()
def reputation(ctx: typer.Context, handle: str) -> None:
    _act(ctx, lambda client: client.reputation(handle))
