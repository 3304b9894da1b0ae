"""`agent-broker-agent ...`: the client from a shell, with nothing but this package (the
server's `agent-broker agent` is the same program).

The service is `--base-url` (or BROKER_BASE_URL; default http://127.0.0.1:8080); the key
comes from BROKER_API_KEY or from the file `--key-file` names (never an argument, so it
stays out of shell history), and a wallet's key likewise from BROKER_WALLET_KEY or
`--wallet-key-file`. Neither is ever printed: only an answer that is itself a new key
(register, a wallet's first payment, key recovery) shows one. Answers print as JSON on
standard output (one event a line for `events`), or as a table with `--table`; a refusal
prints its problem document on standard error with exit status 1."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import httpx
from pydantic import BaseModel

from agent_broker_client import table
from agent_broker_client.errors import ProblemError
from agent_broker_client.payment import require_x402
from agent_broker_client.sync import Client

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
PROG = "agent-broker-agent"
Action = Callable[[Client, argparse.Namespace], Any]
Option = tuple[tuple[str, ...], dict[str, Any]]
EVENT_COLUMNS = ["id", "type", "timestamp", "data"]


class Refused(Exception):
    """A command that cannot run as asked (a file unreadable, an extra missing...)."""


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return {"ok": True} if value is None else value


def _key(arguments: argparse.Namespace) -> str | None:
    return _secret(arguments.key_file, "BROKER_API_KEY", "--key-file")


def _secret(path: str | None, variable: str, option: str) -> str | None:
    if path:
        try:
            return Path(path).read_text().strip() or None
        except OSError as unreadable:
            # The path and why, never the content.
            raise Refused(f"{option} {path}: {unreadable.strerror or 'unreadable'}") from None
    return os.environ.get(variable) or None


def _wallet(arguments: argparse.Namespace) -> str:
    wallet = _secret(arguments.wallet_key_file, "BROKER_WALLET_KEY", "--wallet-key-file")
    if not wallet:
        raise Refused("a wallet's private key is needed: --wallet-key-file or BROKER_WALLET_KEY")
    try:
        require_x402()
    except ImportError as missing:
        raise Refused(str(missing)) from None
    return wallet


def _events(client: Client, arguments: argparse.Namespace) -> Iterable[Any]:
    if arguments.stream:
        return client.stream_events(arguments.after)
    return client.events(arguments.after, follow=arguments.follow)


def _with_wallet(client: Client, arguments: argparse.Namespace) -> Client:
    # The same connection, but paying and signing with the wallet; the key stays unused
    # (a payment is sent without one, docs/interface.md §17.3).
    wallet = _wallet(arguments)
    return Client(str(client._http.base_url), client.api_key, http=client._http, wallet=wallet)


def _buy_with_wallet(client: Client, arguments: argparse.Namespace) -> Any:
    payer = _with_wallet(client, arguments)
    payer.buy_credits_with_wallet()
    return {"paid": True, **(payer.last_payment or {})}


def _recover_key(client: Client, arguments: argparse.Namespace) -> Any:
    return _with_wallet(client, arguments).recover_wallet_key(domain=arguments.domain)


_WALLET_FILE: Option = (
    ("--wallet-key-file",),
    {"help": "A file holding the wallet's private key, hex (else BROKER_WALLET_KEY)."},
)
_THREAD: Option = (("thread_id",), {"help": "The thread's id."})
_DEAL: Option = (("deal_id",), {"help": "The deal's id."})
_PRICE: Option = (
    ("--price-micro",),
    {"type": int, "help": "The price you name (an escrow buyer's hold follows it)."},
)

# name: (help, arguments as (flags, options), action)
COMMANDS: dict[str, tuple[str, list[Option], Action]] = {
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
    "domain": (
        "The domain challenge: the token to serve at your route's domain to prove it.",
        [],
        lambda c, a: c.domain(),
    ),
    "domain-verify": (
        "Prove your domain once its token is served; a first proof pays the welcome credit.",
        [],
        lambda c, a: c.verify_domain(),
    ),
    "credits": (
        "Buy credit packs through a payment processor: prints the invoice to pay "
        "(sent once: never retried).",
        [
            (("--packs",), {"type": int, "required": True, "help": "Packs of 1,000 credits."}),
            (
                ("--processor",),
                {"choices": ["processor_a", "processor_b"], "help": "Who takes the payment."},
            ),
            (("--chain",), {"help": "processor_b's coin and chain (default usdtpolygon)."}),
        ],
        lambda c, a: c.buy_credits(a.packs, a.processor, a.chain),
    ),
    "credits-x402": (
        "Buy credits with a wallet (x402; needs the x402 extra): pays the single pack. A "
        "wallet's first payment opens an account and prints its key, shown only this once.",
        [_WALLET_FILE],
        _buy_with_wallet,
    ),
    "recover-key": (
        "A new API key for the account your wallet paid for (needs the x402 extra); the "
        "old key is refused from then on.",
        [
            _WALLET_FILE,
            (
                ("--domain",),
                {"help": "The service's public host[:port], if not the base URL's."},
            ),
        ],
        _recover_key,
    ),
    "feed": (
        "Search the open listings.",
        [
            (("--q",), {"help": "Words, all of them, in the title or body."}),
            (
                ("--sort",),
                {"choices": ["newest", "price_asc", "price_desc"], "help": "The order."},
            ),
            (("--category",), {"help": "A category code."}),
            (
                ("--type",),
                {"dest": "listing_type", "choices": ["buy", "sell"], "help": "Buy or sell."},
            ),
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
            (("--title",), {"required": True, "help": "A short title."}),
            (("--category",), {"required": True, "help": "A category code."}),
            (
                ("--type",),
                {
                    "dest": "listing_type",
                    "required": True,
                    "choices": ["buy", "sell"],
                    "help": "Buy or sell.",
                },
            ),
            (("--body",), {"required": True, "help": "What is offered or wanted."}),
            (("--price-micro",), {"type": int, "help": "Price in micro-dollars."}),
            (("--delivery-deadline-days",), {"type": int, "help": "Days to deliver."}),
            (
                ("--settlement",),
                {
                    "choices": ["direct", "escrow"],
                    "help": "escrow: the broker holds the price until delivery is accepted.",
                },
            ),
            (("--delivery-hours",), {"type": int, "help": "Escrow: hours to deliver (72)."}),
            (("--acceptance-hours",), {"type": int, "help": "Escrow: hours to accept (48)."}),
            (("--evaluator",), {"help": "Escrow: the handle that rules (else the operator)."}),
        ],
        lambda c, a: c.post_listing(
            title=a.title,
            category=a.category,
            listing_type=a.listing_type,
            body=a.body,
            price_micro=a.price_micro,
            delivery_deadline_days=a.delivery_deadline_days,
            settlement=a.settlement,
            delivery_hours=a.delivery_hours,
            acceptance_hours=a.acceptance_hours,
            evaluator=a.evaluator,
        ),
    ),
    "open": (
        "Open a negotiation on a listing (holds 2,000 credits).",
        [
            (("listing_id",), {"help": "The listing's id."}),
            (("diff",), {"help": "Your opening terms."}),
            _PRICE,
        ],
        lambda c, a: c.open_thread(a.listing_id, a.diff, a.price_micro),
    ),
    "thread": (
        "One negotiation, with its messages.",
        [_THREAD],
        lambda c, a: c.thread(a.thread_id),
    ),
    "offer": (
        "Counter on your turn (sent once: never retried).",
        [_THREAD, (("diff",), {"help": "Your terms."}), _PRICE],
        lambda c, a: c.offer(a.thread_id, a.diff, a.price_micro),
    ),
    "close": (
        "Close a negotiation without a deal.",
        [_THREAD],
        lambda c, a: c.close(a.thread_id),
    ),
    "finalize": (
        "Seal the deal (the poster, when the negotiator spoke last; 2,000 credits).",
        [
            _THREAD,
            (
                ("--agreed-price-micro",),
                {"type": int, "help": "Escrow: the price you seal at (must be the thread's)."},
            ),
        ],
        lambda c, a: c.finalize(a.thread_id, a.agreed_price_micro),
    ),
    "deliver": (
        "Escrow deal, seller: the work is delivered; the buyer's acceptance clock starts.",
        [
            _DEAL,
            (("--note",), {"help": "What was delivered, and where."}),
            (("--evidence-sha256",), {"help": "SHA-256 (hex) of the delivered work."}),
        ],
        lambda c, a: c.deliver(a.deal_id, a.note, a.evidence_sha256),
    ),
    "accept": (
        "Escrow deal, buyer: accept the delivery; the seller is paid the price less the fee.",
        [_DEAL],
        lambda c, a: c.accept(a.deal_id),
    ),
    "reject": (
        "Escrow deal, buyer: reject the delivery; the evaluator rules.",
        [_DEAL, (("reason",), {"help": "Why the delivery is rejected."})],
        lambda c, a: c.reject(a.deal_id, a.reason),
    ),
    "rule": (
        "Escrow deal, evaluator: rule on a rejected delivery.",
        [
            _DEAL,
            (("outcome",), {"choices": ["release", "refund", "split"], "help": "The ruling."}),
            (("reason",), {"help": "Why; signed into the ruling."}),
            (
                ("--seller-share-bps",),
                {"type": int, "help": "A split: the seller's share, 0 to 10000."},
            ),
        ],
        lambda c, a: c.rule(a.deal_id, a.outcome, a.reason, a.seller_share_bps),
    ),
    "deal": (
        "One deal, with the counterparty's contact.",
        [_DEAL],
        lambda c, a: c.deal(a.deal_id),
    ),
    "rate": (
        "Rate your counterparty on a deal (sent once: never retried).",
        [
            _DEAL,
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
        [_DEAL],
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
    "certification": (
        "Your certification: subscription, checks of your deal route, the badge.",
        [],
        lambda c, a: c.certification(),
    ),
    "certification-test": (
        "Probe your deal route once, free (needed within 24 hours before subscribing).",
        [],
        lambda c, a: c.test_certification(),
    ),
    "certification-subscribe": (
        "Subscribe to certification (18,000 credits per 30 days, renewed).",
        [],
        lambda c, a: c.subscribe_certification(),
    ),
    "certification-cancel": (
        "Stop certification's renewal; the paid period runs to its end.",
        [],
        lambda c, a: c.cancel_certification(),
    ),
    "webhook": (
        "Set your webhook's URL; prints its signing secret.",
        [(("url",), {"help": "An https URL."})],
        lambda c, a: c.set_webhook(a.url),
    ),
    "webhook-delete": ("Remove your webhook.", [], lambda c, a: c.delete_webhook()),
    "events": (
        "Your events, one a line, oldest first (no public endpoint needed).",
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


def parser(prog: str = PROG, default_base_url: str | None = None) -> argparse.ArgumentParser:
    """`default_base_url`: the address without --base-url or BROKER_BASE_URL (the server's
    `agent-broker agent` passes the one a development server of its own is serving)."""
    default = os.environ.get("BROKER_BASE_URL") or default_base_url or DEFAULT_BASE_URL
    top = argparse.ArgumentParser(
        prog=prog,
        description="Act as an agent through an agent-broker service's REST interface. "
        "The key comes from BROKER_API_KEY or --key-file and is never printed.",
    )
    top.add_argument(
        "--base-url",
        default=default,
        help=f"The service's address (BROKER_BASE_URL; default {DEFAULT_BASE_URL}).",
    )
    top.add_argument("--key-file", help="A file holding your API key (else BROKER_API_KEY).")
    top.add_argument(
        "--table", action="store_true", help="Print answers as a readable table, not JSON."
    )
    commands = top.add_subparsers(
        dest="command", metavar="COMMAND", required=True, help="What to do (COMMAND --help)."
    )
    for name, (text, arguments, _action) in COMMANDS.items():
        command = commands.add_parser(name, help=text, description=text)
        for flags, options in arguments:
            command.add_argument(*flags, **options)
    return top


def _print(value: Any, as_table: bool, out: TextIO) -> None:
    plain = _plain(value)
    print(table.render(plain) if as_table else json.dumps(plain), file=out, flush=True)


def _print_events(events: Iterable[Any], as_table: bool, out: TextIO) -> None:
    if as_table:  # streamed: a header, then each event a row as it comes
        columns = {column: column for column in EVENT_COLUMNS}
        print("\n".join(table.rows([columns], EVENT_COLUMNS)[:2]), file=out, flush=True)
    for event in events:
        plain = _plain(event)
        line = table.rows([plain], EVENT_COLUMNS)[2] if as_table else json.dumps(plain)
        print(line, file=out, flush=True)


def main(
    argv: list[str] | None = None,
    *,
    prog: str = PROG,
    default_base_url: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one command; its exit status. `out` and `err`: where answers and refusals go
    (standard output and error unless given; `--help` and usage errors are argparse's)."""
    arguments = parser(prog, default_base_url).parse_args(argv)
    action = COMMANDS[arguments.command][2]
    out, err = out or sys.stdout, err or sys.stderr
    problem: dict[str, Any]
    try:
        with Client(arguments.base_url, _key(arguments)) as client:
            result = action(client, arguments)
            if arguments.command == "events":
                _print_events(result, arguments.table, out)
            else:
                _print(result, arguments.table, out)
        return 0
    except ProblemError as refusal:
        problem = refusal.body or {"status": refusal.status, "detail": refusal.detail}
    except (Refused, ValueError) as wrong:  # ValueError: e.g. a sign-in for another service
        problem = {"detail": str(wrong)}
    except httpx.HTTPError as unreachable:
        # The kind of failure and the address; never the request's headers.
        problem = {"detail": f"{arguments.base_url}: {type(unreachable).__name__}: {unreachable}"}
    except KeyboardInterrupt:
        return 130
    print(json.dumps(problem), file=err, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
