"""The documents' generated tables: the settings (from `agent_broker.config.Settings`) and
the problem reasons (from `agent_broker.problems.Reason`), each with a one-line meaning
kept here.

A document asks for a table with a marked block, which `make docs` (this module run as
`python -m tools.docs_tables`) rewrites in place:

    <!-- generated: settings -->
    ...
    <!-- end -->

`--check` rewrites nothing and exits 1 naming every document whose block differs;
tests/docs/test_generated_tables.py runs the same comparison.
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path

from pydantic_core import PydanticUndefined

from agent_broker.config import Settings
from agent_broker.problems import Reason

ROOT = Path(__file__).resolve().parent.parent

# One line per setting, read as "BROKER_X: <meaning>". A setting without one stops the
# generator (and the docs tests), so a new setting cannot ship undocumented.
SETTING_MEANINGS: dict[str, str] = {
    "env": "`development`, `staging` or `production`; production refuses development "
    "secrets and defaults (see Deploy)",
    "database_url": "SQLAlchemy URL of the database; `postgresql+psycopg://user@host:5432/db` "
    "for PostgreSQL; production needs it set explicitly",
    "redis_url": "e.g. `redis://127.0.0.1:6379/0`: rate limits shared across workers and "
    "replicas; calls time out after 2 s, and while Redis is unreachable rate limits fail open "
    "(a warning is logged) and Redis is tried again after 10 s",
    "public_base_url": "the address clients use: prefixes problem `type` URLs, payment and "
    "callback URLs, the agent card, robots.txt and the status page; in development, left "
    "unset, `serve` uses the address it serves (`make run PORT=9000`: port 9000)",
    "bindings_base": "base of the `{bindings_base}/webhook-v1` binding identifier (empty: "
    "`{public_base_url}/bindings`); the documents are served at `/bindings/...` whatever it is",
    "key_hash_secret": "HMAC secret for API-key hashes and handles; 32+ characters, required "
    "in production; changing it invalidates every API key",
    "signing_key": "Ed25519 secret for PASETO tokens (deal credentials, attestations): 64 hex "
    "characters (the raw seed) or an unencrypted PEM PKCS#8 key; required in production; "
    "unset elsewhere: generated once into `{BROKER_VAR_DIR}/signing-key.pem`",
    "card_signing_key": "Ed25519 secret that signs the agent card (same formats as "
    "`BROKER_SIGNING_KEY`); required in production; unset elsewhere: generated once into "
    "`{BROKER_VAR_DIR}/card-signing-key.pem`",
    "security_contact": "the `Contact:` of `/.well-known/security.txt` (e.g. "
    "`mailto:security@yourcompany.com`); empty: no security.txt",
    "operator_name": "the organization the agent card's `provider` names",
    "var_dir": "where development keys (and, by default, the SQLite file) live; a relative "
    "value is made absolute when read, so every command finds the same files",
    "trusted_proxies": "comma-separated addresses or CIDR ranges whose `X-Forwarded-For` is "
    "believed",
    "register_rate_limit": "registrations per source address (`limits` notation)",
    "wallet_recovery_rate_limit": "wallet key recovery: challenges per source address, "
    "recoveries per source address and per wallet, each (`limits` notation)",
    "violation_limit": "scanner refusals per account before 429 `too_many_violations` "
    "(`limits` notation)",
    "thread_ttl_days": "how long a negotiation thread (and the opener's hold) lasts without a "
    "seal (1 to 365)",
    "listing_ttl_days": "how long a listing stays live (1 to 365)",
    "idempotency_retention_hours": "how long an Idempotency-Key's first answer is kept",
    "escrow_fee_bps": "the broker's fee on an escrow, in basis points of the seller's share "
    "of the price (all of it on a release), taken from that share (100 = 1%; 0 to 10000), "
    "paid to the fee book",
    "event_retention_hours": "how long every account's events stay readable through "
    "`GET /v1/events` and its stream (the `forget-events` job forgets older ones)",
    "event_stream_seconds": "how long one `GET /v1/events/stream` connection lasts before "
    "the service ends it; the client reconnects with Last-Event-ID",
    "sqlite_busy_timeout_ms": "how long a SQLite writer waits for the lock",
    "db_pool_size": "connection pool size per worker; on PostgreSQL also how many requests of "
    "a worker hold a database session at once",
    "db_dispatch": "PostgreSQL only: `inline` runs a request's database work on the worker's "
    "event loop, one write transaction at a time per worker (run two or more workers); "
    "`threads` runs it on `BROKER_DB_POOL_SIZE` + 1 threads per worker",
    "db_statement_timeout_ms": "PostgreSQL only: how long one statement of a request may run "
    "before the server cancels it (0: no limit); the request answers 503 `internal_error` with "
    "`Retry-After: 1`",
    "db_lock_timeout_ms": "PostgreSQL only: how long a statement may wait for a row or table "
    "lock (0: no limit), for requests, jobs and the CLI alike",
    "db_job_statement_timeout_ms": "PostgreSQL only: the statement limit of scheduled jobs and "
    "of the CLI's commands; keep it under the job lease of 10 minutes",
    "log_level": "`DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL` (in any case); logs are "
    "JSON lines on standard error and never contain keys, bodies or query strings",
    "jobs_enabled": "run the scheduled jobs inside `serve`",
    "jobs_tick_seconds": "how often `serve` looks for due jobs",
    "metrics_enabled": "serve Prometheus metrics at `/metrics` (404 when off)",
    "planned_routes": "the request path's speed layer (`http/routing.py`); `false` leaves "
    "matching and request handling to FastAPI itself, with the same answers, slower",
    "allow_private_fetch": "local testing only: outbound fetches to hosts users choose may "
    "reach private and loopback addresses, and plain http; refused in production",
    "outbound_ca_bundle": "a PEM file of extra CA certificates trusted for outbound HTTPS, "
    "beside the public ones (a private CA of the operator's identity provider, processor "
    "or facilitator; a test server's); allowed in production",
    "outbound_resolve": "testing only: comma-separated `host=address[:port]` overrides of DNS "
    "for outbound fetches (like curl's `--resolve`); refused in production",
    "idp_issuer": "dashboard sessions: the identity provider's issuer (`iss`); the three "
    "`BROKER_IDP_*` settings are set together or not at all (sessions off)",
    "idp_audience": "dashboard sessions: the audience the identity provider's tokens name for "
    "this service",
    "idp_jwks_url": "dashboard sessions: the identity provider's key set (`https://` or "
    "`file://`; plain `http://` only off production)",
    "oauth_issuer": "agent OAuth access tokens: the issuer; the three `BROKER_OAUTH_*` "
    "settings are set together or not at all (OAuth off)",
    "oauth_audience": "agent OAuth access tokens: the audience its tokens name for this service",
    "oauth_jwks_url": "agent OAuth access tokens: the issuer's key set (as for the identity "
    "provider)",
    "processor_a_api_url": "processor_a (Lightning hosted charges): its API base URL; the "
    "three `BROKER_PROCESSOR_A_*` settings together offer it",
    "processor_a_api_key": "processor_a: the API key its charges are created with",
    "processor_a_webhook_secret": "processor_a: the HMAC-SHA256 secret its callbacks are "
    "signed with",
    "processor_b_api_url": "processor_b (address-forwarding gateway): its API base URL",
    "processor_b_callback_sources": "addresses or CIDRs processor_b's callbacks are believed from",
    "processor_b_address_usdttrc20": "processor_b: your wallet for USDT on Tron; a chain "
    "without an address is not offered",
    "processor_b_address_usdterc20": "processor_b: your wallet for USDT on Ethereum",
    "processor_b_address_usdc": "processor_b: your wallet for USDC on Ethereum",
    "processor_b_address_usdcsol": "processor_b: your wallet for USDC on Solana",
    "processor_b_address_usdtpolygon": "processor_b: your wallet for USDT on Polygon (the "
    "default chain)",
    "processor_b_address_usdcpolygon": "processor_b: your wallet for USDC on Polygon",
    "processor_b_address_usdcbase": "processor_b: your wallet for USDC on Base",
    "domain_grant_micro": "the one-time welcome credit for a first domain proof, in µUSD; 0 "
    "pays nothing",
    "domain_grant_daily_cap": "welcome credits paid per UTC day, deployment-wide; beyond it a "
    "proof waits for the next day (0: none paid)",
    "domain_verify_rate_limit": "domain verify calls per account, failed ones included "
    "(`limits` notation)",
    "certification_test_rate_limit": "free certification tests per account (`limits` notation)",
    "certification_check_concurrency": "how many deal routes the `certification-checks` job "
    "probes at once (1 to 100)",
    "x402_enabled": "take x402 payments on the payable routes; off: no manifest, 401 without a key",
    "x402_facilitator_url": "the facilitator's base URL (`/verify`, `/settle`); `https://` "
    "(plain `http://` off production); required when x402 is on",
    "x402_pay_to": "the wallet payments are made out to (0x and 40 hex digits); required when "
    "x402 is on",
    "x402_network": "the chain payments are made on",
    "x402_asset": "another 6-decimal token than USDC on the network (with its EIP-712 name "
    "and version below)",
    "x402_asset_name": "the EIP-712 domain name of `BROKER_X402_ASSET`",
    "x402_asset_version": "the EIP-712 domain version of `BROKER_X402_ASSET`",
    "x402_attempt_rate_limit": "x402 payment attempts per source address, and per paying "
    "wallet once the broker has checked its (plain ECDSA) signature (`limits` notation)",
    "invoice_rate_limit": "invoices (`POST /dashboard/credits`) per account (`limits` notation)",
    "terms_url": "the terms a payment accepts, named in the x402 manifest and each offer's "
    "`extra.termsUrl`; empty: none",
    "max_body_bytes": "largest request body accepted (1,024 to 16 MiB); larger is 413",
    "body_timeout_seconds": "how long a client may take to send its whole body; 408 after",
}

# Where the default is better said than printed.
SETTING_DEFAULTS: dict[str, str] = {
    "key_hash_secret": "a development value",
    "bindings_base": "`{public_base_url}/bindings`",
    "signing_key": "generated (not in production)",
    "card_signing_key": "generated (not in production)",
    "x402_asset": "USDC on the network",
    "database_url": "`broker.db` in `BROKER_VAR_DIR` (SQLite)",
    "var_dir": "`var/` of the source checkout, or `~/.local/share/agent-broker` when installed",
}

# Status or statuses, and one line: when the service answers the reason. A reason nothing
# emits says so; the docs tests read which are emitted from the package itself.
REASON_MEANINGS: dict[str, tuple[str, str]] = {
    "invalid_input": (
        "400, 405, 408, 413",
        "a field fails its rule, a body that is not JSON (or sent without a JSON "
        "`content-type`), nests deeper than 32 levels or holds a NUL or a lone surrogate "
        "escape, a missing or malformed "
        "`Idempotency-Key`; 405 a method the path does not take; 408 a body too slow; 413 too "
        "large",
    ),
    "unauthorized": (
        "401",
        "no credential, or a key, session or token the service does not accept",
    ),
    "insufficient_funds_self": (
        "402",
        "your spendable balance cannot cover the charge (posting fee, the deal-fee hold, your "
        "deal fee at finalize, an escrow price hold or charge, a certification period); with "
        "x402 on, the answer carries the payment offers",
    ),
    "held_funds_mismatch": (
        "402",
        "finalizing an escrow deal when the buyer's price hold is not exactly the thread's "
        "price, or with an `agreed_price_micro` other than it; nothing is sealed",
    ),
    "forbidden": (
        "403",
        "reading the threads of a listing you did not post; finalizing as the negotiator; "
        "rating or disputing a deal you are not party to; an escrow step by the wrong party "
        "(delivering as the buyer, ruling as anyone but the evaluator); the evaluator opening "
        "a thread on the listing; a credential without the scope; a processor_b callback from "
        "an address not believed",
    ),
    "api_key_disabled": (
        "403",
        "the account is disabled (rotate its key with a dashboard session, a wallet "
        "recovery, or the service's operator)",
    ),
    "not_found": (
        "404",
        "unknown listing, thread, deal, handle, link or path; one you are not party to",
    ),
    "identity_conflict": (
        "409",
        "a dashboard session or OAuth token and an API key of two different accounts",
    ),
    "out_of_turn": (
        "409",
        "an offer when it is not your turn; any move on a rejected thread; finalizing while "
        "your own last offer is unanswered; an escrow step the escrow's state does not allow "
        "yet (accepting before delivery, ruling before a rejection, delivering after "
        "deliver_by); rating or disputing an escrow deal before its escrow settles",
    ),
    "already_finalized": (
        "409",
        "closing or finalizing a thread that was already sealed; an escrow step on an escrow "
        "that has settled",
    ),
    "duplicate_rating": ("409", "a second rating from the same party on a deal"),
    "duplicate_dispute": ("409", "a second dispute from the same party on a deal"),
    "idempotency_key_reuse": ("409", "an `Idempotency-Key` already used with another request"),
    "self_listing_negotiation": ("409", "opening a thread on your own listing"),
    "hold_not_capturable": ("409", "finalizing when the opener's hold is no longer active"),
    "missing_deal_route_self": (
        "409",
        "finalizing, or asking for a domain challenge or proof, with no deal route of yours",
    ),
    "missing_deal_route_counterparty": (
        "409",
        "finalizing while the other party has no deal route",
    ),
    "account_has_escrow": ("409", "reserved for escrow; not answered by any route today"),
    "listing_conflict": (
        "409",
        "the listing changed while a finalize ran (another seal won); read it again",
    ),
    "invoice_already_consumed": ("409", "a processor callback for a payment already credited"),
    "invoice_conflict": ("409", "a processor callback that contradicts the invoice it names"),
    "x402_payment_replay": (
        "409",
        "an x402 payment authorization presented again (the detail says when it is pending)",
    ),
    "oauth_token_replay": ("409", "an OAuth access token used for a second finalize"),
    "listing_cap_reached": ("409", "a 4th listing from an account never funded with real money"),
    "grant_cap_reached": (
        "200",
        "not a refusal: `grant_reason` of a domain proof recorded while the day's welcome "
        "credits are spent",
    ),
    "listing_expired": ("410", "opening a thread on a listing that is not live"),
    "thread_auto_closed": (
        "410",
        "acting on a thread the service closed (past its life, or another thread sealed)",
    ),
    "deal_purged": (
        "410",
        "reading a deal from `purge_at` on; rating or disputing after the 7-day window",
    ),
    "contact_leak": ("422", "scanned text carries contact details"),
    "prompt_injection": ("422", "scanned text carries instructions aimed at the agents reading it"),
    "terms_required": ("428", 'registration without `"accepted_terms": true`'),
    "profile_incomplete_self": ("428", "opening a thread before your contact and route are set"),
    "profile_incomplete_counterparty": (
        "428",
        "opening a thread on a listing whose poster has not finished their profile",
    ),
    "too_many_violations": (
        "429",
        "too many scanner refusals from your account (no `Retry-After`)",
    ),
    "rate_limited": ("429", "a rate limit was exceeded; wait `retryAfterSeconds`"),
    "a2a_version_not_supported": (
        "501",
        "an A2A 0.3 surface (`/.well-known/agent.json`, `/v1/message:send`, ...); use A2A 1.0 "
        "at `POST /a2a`",
    ),
    "internal_error": (
        "500, 503",
        "a fault in the service (500), or the database did not answer in time (503, "
        "`Retry-After`); safe to retry with the same `Idempotency-Key`",
    ),
    "processor_unavailable": (
        "502",
        "a payment processor or x402 facilitator is not configured or did not answer; nothing "
        "was credited (an x402 `settlement.status: pending` may still settle)",
    ),
    "certification_domain_unverified": (
        "409",
        "certification test or subscription while the deal route is not on a proved domain",
    ),
    "certification_unfunded": (
        "409",
        "certification subscription from an account never funded with real money",
    ),
    "certification_test_required": (
        "409",
        "certification subscription without a passing free test of the current route in the "
        "last 24 hours",
    ),
}


class Undocumented(LookupError):
    """A setting or reason without a meaning here."""


def _type_name(annotation: object) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{value}`" for value in typing.get_args(annotation))
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        names = [_type_name(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
        return " \\| ".join(names)
    return getattr(annotation, "__name__", str(annotation))


def _default(name: str, value: object) -> str:
    if name in SETTING_DEFAULTS:
        return SETTING_DEFAULTS[name]
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def settings_table() -> str:
    missing = [name for name in Settings.model_fields if name not in SETTING_MEANINGS]
    if missing:
        raise Undocumented(f"settings without a meaning in tools/docs_tables.py: {missing}")
    stale = [name for name in SETTING_MEANINGS if name not in Settings.model_fields]
    if stale:
        raise Undocumented(f"meanings of settings that no longer exist: {stale}")
    rows = ["| Variable | Type | Default | Meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default if field.default is not PydanticUndefined else None
        rows.append(
            f"| `BROKER_{name.upper()}` | {_type_name(field.annotation)} "
            f"| {_default(name, default)} | {SETTING_MEANINGS[name]} |"
        )
    return "\n".join(rows)


def reasons_table() -> str:
    missing = [reason.value for reason in Reason if reason.value not in REASON_MEANINGS]
    if missing:
        raise Undocumented(f"reasons without a meaning in tools/docs_tables.py: {missing}")
    stale = [value for value in REASON_MEANINGS if value not in Reason.__members__]
    if stale:
        raise Undocumented(f"meanings of reasons that no longer exist: {stale}")
    rows = ["| Reason | Status | When |", "|---|---|---|"]
    for reason in Reason:
        status, meaning = REASON_MEANINGS[reason.value]
        rows.append(f"| `{reason.value}` | {status} | {meaning} |")
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {"settings": settings_table, "reasons": reasons_table}

_BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n)(.*?)(<!-- end -->)", re.DOTALL)


def render(text: str) -> str:
    """The document with every generated block made afresh."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in TABLES:
            raise KeyError(f"no generated table is called {name!r}")
        return f"{match.group(1)}{TABLES[name]()}\n{match.group(4)}"

    return _BLOCK.sub(fill, text)


def documents() -> list[Path]:
    """Every Markdown document of the repository with a generated block."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [path for path in paths if _BLOCK.search(path.read_text(encoding="utf-8"))]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in documents():
        text = path.read_text(encoding="utf-8")
        fresh = render(text)
        if fresh == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.write_text(fresh, encoding="utf-8")
    for path in stale:
        print(f"{path}: {'out of date' if check else 'rewritten'}", file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
