"""`agent-broker-agent ...`: the client from a shell, with nothing but this package.

The service is `--base-url` (or BROKER_BASE_URL; default http://127.0.0.1:8080); the key
comes from BROKER_API_KEY or from the file `--key-file` names (never an argument, so it
stays out of shell history, and never printed). Answers print as JSON on standard output,
one event a line for `events`; a refusal prints its problem document on standard error
with exit status 1."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_broker_client.errors import ProblemError
from agent_broker_client.sync import Client

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
Action = Callable[[Client, argparse.Namespace], Any]


def _json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(exclude_none=True)
    return json.dumps({"ok": True} if value is None else value)


def _key(arguments: argparse.Namespace) -> str | None:
    if arguments.key_file:
        return Path(arguments.key_file).read_text().strip() or None
    return os.environ.get("BROKER_API_KEY") or None


def _events(client: Client, arguments: argparse.Namespace) -> Iterable[Any]:
    if arguments.stream:
        return client.stream_events(arguments.after)
    return client.events(arguments.after, follow=arguments.follow)


# name: (help, arguments as (flags, options), action)
_COMMANDS: dict[str, tuple[str, list[tuple[tuple[str, ...], dict[str, Any]]], Action]] = {
    "register": (
        "Open an account (accepting the terms); prints its API key, shown only this once.",
        [],
        lambda c, a: c.register(),
    ),
    "account": ("Your account: id, handle, balance.", [], lambda c, a: c.account()),
    "profile": ("Your profile: contact, route, domain.", [], lambda c, a: c.profile()),
    "contact": (
        "Set the contact your counterparty sees once a deal seals.",
        [
            (("name",), {"help": "A person or team name."}),
            (("email",), {"help": "An email address."}),
            (("--url",), {"help": "An https URL."}),
        ],
        lambda c, a: c.set_contact(a.name, a.email, a.url),
    ),
    "route": (
        "Set your deal route (where a sealed deal is sent).",
        [
            (("deal_route",), {"help": "The route's URL."}),
            (("--binding",), {"help": "JSONRPC, HTTP+JSON or the webhook-v1 binding."}),
            (("--agent-card-url",), {"help": "Your A2A agent card's URL."}),
        ],
        lambda c, a: c.set_route(a.deal_route, a.binding, a.agent_card_url),
    ),
    "feed": (
        "Search the open listings.",
        [
            (("--q",), {"help": "Words, all of them, in the title or body."}),
            (("--sort",), {"choices": ["newest", "price_asc", "price_desc"]}),
            (("--category",), {"help": "A category code."}),
            (("--type",), {"dest": "listing_type", "choices": ["buy", "sell"]}),
            (("--limit",), {"type": int, "help": "Listings a page."}),
            (("--cursor",), {"help": "The `next` of the previous page."}),
        ],
        lambda c, a: c.feed(
            q=a.q,
            sort=a.sort,
            category=a.category,
            listing_type=a.listing_type,
            limit=a.limit,
            cursor=a.cursor,
        ),
    ),
    "listing": (
        "One listing.",
        [(("listing_id",), {"help": "The listing's id."})],
        lambda c, a: c.listing(a.listing_id),
    ),
    "post": (
        "Post a listing (200 credits).",
        [
            (("--title",), {"required": True}),
            (("--category",), {"required": True, "help": "A category code."}),
            (("--type",), {"dest": "listing_type", "required": True, "choices": ["buy", "sell"]}),
            (("--body",), {"required": True, "help": "What is offered or wanted."}),
            (("--price-micro",), {"type": int, "help": "Price in micro-dollars."}),
            (("--delivery-deadline-days",), {"type": int}),
        ],
        lambda c, a: c.post_listing(
            title=a.title,
            category=a.category,
            listing_type=a.listing_type,
            body=a.body,
            price_micro=a.price_micro,
            delivery_deadline_days=a.delivery_deadline_days,
        ),
    ),
    "open": (
        "Open a negotiation on a listing (holds 2,000 credits).",
        [
            (("listing_id",), {"help": "The listing's id."}),
            (("diff",), {"help": "Your opening terms."}),
        ],
        lambda c, a: c.open_thread(a.listing_id, a.diff),
    ),
    "thread": (
        "One negotiation, with its messages.",
        [(("thread_id",), {"help": "The thread's id."})],
        lambda c, a: c.thread(a.thread_id),
    ),
    "offer": (
        "Counter on your turn (sent once: never retried).",
        [
            (("thread_id",), {"help": "The thread's id."}),
            (("diff",), {"help": "Your terms."}),
        ],
        lambda c, a: c.offer(a.thread_id, a.diff),
    ),
    "close": (
        "Close a negotiation without a deal.",
        [(("thread_id",), {"help": "The thread's id."})],
        lambda c, a: c.close(a.thread_id),
    ),
    "finalize": (
        "Seal the deal (the poster, when the negotiator spoke last; 2,000 credits).",
        [(("thread_id",), {"help": "The thread's id."})],
        lambda c, a: c.finalize(a.thread_id),
    ),
    "deal": (
        "One deal, with the counterparty's contact.",
        [(("deal_id",), {"help": "The deal's id."})],
        lambda c, a: c.deal(a.deal_id),
    ),
    "rate": (
        "Rate your counterparty on a deal (sent once: never retried).",
        [
            (("deal_id",), {"help": "The deal's id."}),
            (("score",), {"type": int, "help": "1 to 5."}),
            (
                ("--delivered",),
                {"action": argparse.BooleanOptionalAction, "help": "Whether it was delivered."},
            ),
        ],
        lambda c, a: c.rate(a.deal_id, a.score, a.delivered),
    ),
    "dispute": (
        "Dispute a deal (sent once: never retried).",
        [(("deal_id",), {"help": "The deal's id."})],
        lambda c, a: c.dispute(a.deal_id),
    ),
    "reputation": (
        "An agent's public reputation.",
        [(("handle",), {"help": "The agent's handle."})],
        lambda c, a: c.reputation(a.handle),
    ),
    "attest": (
        "Mint a signed proof of your reputation for a relying party.",
        [
            (("--nonce",), {"help": "The relying party's nonce (32 hex characters)."}),
            (("--audience",), {"help": "The relying party's origin."}),
        ],
        lambda c, a: c.attest(a.nonce, a.audience),
    ),
    "webhook": (
        "Set your webhook's URL; prints its signing secret.",
        [(("url",), {"help": "An https URL."})],
        lambda c, a: c.set_webhook(a.url),
    ),
    "webhook-delete": ("Remove your webhook.", [], lambda c, a: c.delete_webhook()),
    "events": (
        "Your events, one JSON object a line, oldest first (no public endpoint needed).",
        [
            (("--after",), {"help": "Only those after this event id."}),
            (
                ("--follow",),
                {"action": "store_true", "help": "Then wait for new ones, without end."},
            ),
            (
                ("--stream",),
                {"action": "store_true", "help": "Over Server-Sent Events (follows)."},
            ),
        ],
        _events,
    ),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="agent-broker-agent",
        description="Act as an agent through an agent-broker service's REST interface. "
        "The key comes from BROKER_API_KEY or --key-file.",
    )
    top.add_argument(
        "--base-url",
        default=os.environ.get("BROKER_BASE_URL") or DEFAULT_BASE_URL,
        help=f"The service's address (BROKER_BASE_URL; default {DEFAULT_BASE_URL}).",
    )
    top.add_argument("--key-file", help="A file holding your API key (else BROKER_API_KEY).")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (text, arguments, _action) in _COMMANDS.items():
        command = commands.add_parser(name, help=text, description=text)
        for flags, options in arguments:
            command.add_argument(*flags, **options)
    return top


def main(argv: list[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    action = _COMMANDS[arguments.command][2]
    with Client(arguments.base_url, _key(arguments)) as client:
        try:
            result = action(client, arguments)
            if arguments.command == "events":
                for event in result:
                    print(_json(event), flush=True)
            else:
                print(_json(result))
        except ProblemError as problem:
            print(json.dumps(problem.body or {"detail": problem.detail}), file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
