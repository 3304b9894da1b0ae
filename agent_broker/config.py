"""Service configuration, read from BROKER_* environment variables."""

from __future__ import annotations

import ipaddress
import os
import re
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent_broker.pricing import DOMAIN_GRANT_MICRO

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from limits import RateLimitItem


def parse_resolve(spec: str) -> dict[str, tuple[str, int | None]]:
    """`host=address[:port]`, comma-separated; an IPv6 address with a port is bracketed."""
    overrides: dict[str, tuple[str, int | None]] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        host, sep, target = item.partition("=")
        host, target = host.strip().lower().rstrip("."), target.strip()
        if not sep or not host or not target:
            raise ValueError(f"{item!r} is not host=address[:port]")
        port: int | None = None
        if target.startswith("["):
            address, _, rest = target[1:].partition("]")
            if rest:
                port = int(rest.removeprefix(":"))
        elif target.count(":") == 1:
            address, port_text = target.split(":")
            port = int(port_text)
        else:
            address = target
        ipaddress.ip_address(address)  # ValueError when it is not an address
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"{item!r} has a port out of range")
        overrides[host] = (address, port)
    return overrides


DEV_KEY_HASH_SECRET = "development-only-key-hash-secret-change-me"

# The settings written in the `limits` notation; each is one rate.
RATE_LIMIT_SETTINGS = (
    "register_rate_limit",
    "wallet_recovery_rate_limit",
    "violation_limit",
    "domain_verify_rate_limit",
    "certification_test_rate_limit",
    "x402_attempt_rate_limit",
    "invoice_rate_limit",
)
# The names both the service's log set-up (agent_broker.logging, the standard library's
# levels) and uvicorn's log_level take, in any case.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SIGNING_KEY_FORMAT = (
    "must be 64 hex characters (the raw Ed25519 seed) or an unencrypted PEM PKCS#8 "
    "Ed25519 private key"
)
_HEX_SEED = re.compile(r"[0-9a-fA-F]{64}")


def parse_rate_limit(text: str) -> RateLimitItem:
    """One rate in the `limits` notation ("20/hour", "5 per minute"), parsed by `limits`
    itself. Several rates ("10/hour;20/day") are refused rather than cut to the first, and
    a rate of zero ("0/hour") too.
    The messages never repeat the value."""
    from limits import parse_many

    try:
        items = parse_many(text)
    except ValueError:
        raise ValueError(
            'must be a rate in the `limits` notation, e.g. "20/hour" or "5 per minute"'
        ) from None
    if len(items) != 1:
        raise ValueError('takes one rate, e.g. "20/hour", not several separated by ";", "," or "|"')
    if items[0].amount < 1:
        # A rate of nothing would refuse every request, which no limit here is meant to do.
        raise ValueError('must allow at least one request per period, e.g. "1/hour"')
    return items[0]


def parse_signing_key(text: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from 64 hex characters (the raw 32-byte seed) or a PEM
    PKCS#8 private key; ValueError(SIGNING_KEY_FORMAT) otherwise, never echoing the key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = text.strip()
    if _HEX_SEED.fullmatch(text):
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(text))
    if text.startswith("-----BEGIN"):
        # Environment variables often carry a PEM with its newlines escaped.
        pem = text.replace("\\n", "\n").encode()
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError):
            key = None
        if isinstance(key, Ed25519PrivateKey):
            return key
    raise ValueError(SIGNING_KEY_FORMAT)


def default_var_dir() -> str:
    """Where development state lives when BROKER_VAR_DIR is unset, whatever the working
    directory: `var/` of the source checkout the package runs from (the folder holding its
    pyproject.toml), else the user's data folder, `$XDG_DATA_HOME/agent-broker`
    (`~/.local/share/agent-broker`)."""
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():
        return str(checkout / "var")
    data_home = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return str(base / "agent-broker")


def served_url_file(var_dir: str) -> Path:
    """Where `agent-broker serve`, in development, leaves the address it serves while it
    runs; `agent-broker agent` reads it for its default."""
    return Path(var_dir) / "served-url"


def database_label(database_url: str) -> str:
    """What a log line may say of the database: a SQLite file's absolute path, or a server's
    dialect, host, port and database name (never the user or password)."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        database = url.database or ""
        return os.path.abspath(database) if database and database != ":memory:" else ":memory:"
    port = f":{url.port}" if url.port else ""
    return f"{url.get_backend_name()}://{url.host or ''}{port}/{url.database or ''}"


def _is_evm_address(value: str) -> bool:
    return re.fullmatch(r"0x[0-9a-fA-F]{40}", value) is not None


class Settings(BaseSettings):
    # Values stay out of error messages: a BROKER_* value may be a secret.
    model_config = SettingsConfigDict(
        env_prefix="BROKER_", extra="ignore", hide_input_in_errors=True
    )

    env: Literal["development", "staging", "production"] = "development"
    # Empty = the SQLite file broker.db in var_dir (production sets it).
    database_url: str = ""
    redis_url: str | None = None
    # The address clients use. Unset in development, `agent-broker serve` sets it to the
    # address it binds (http://HOST:PORT); elsewhere unset means this default.
    public_base_url: str = "http://127.0.0.1:8080"
    # Base of the binding identifiers, e.g. "{bindings_base}/webhook-v1"; empty = derived.
    bindings_base: str = ""
    key_hash_secret: str = DEV_KEY_HASH_SECRET
    # Ed25519 secret for PASETO v4.public (hex or PEM); empty in development = generated
    # once and kept under var_dir.
    signing_key: str = ""
    # Ed25519 secret the agent card is signed with (JWS, /.well-known/jwks.json): the same
    # formats; required in production, generated once under var_dir elsewhere.
    card_signing_key: str = ""
    # Published in /.well-known/security.txt (e.g. mailto:security@example.com); empty =
    # no security.txt.
    security_contact: str = ""
    # Who runs this deployment, as the agent card's provider names it.
    operator_name: str = "agent-broker"
    # Development state: the default SQLite file and the generated signing keys. Empty =
    # default_var_dir(), the same folder from any working directory; a relative path is
    # taken from the working directory.
    var_dir: str = ""
    # Comma-separated addresses or CIDR ranges whose X-Forwarded-For is believed.
    trusted_proxies: str = ""
    # `limits` notation, e.g. "20/hour".
    register_rate_limit: str = "20/hour"
    # Wallet key recovery (`limits` notation): challenges and recoveries per source
    # address, and recoveries per wallet.
    wallet_recovery_rate_limit: str = "10/hour"
    # Scanner refusals an account may collect before 429 too_many_violations (`limits`).
    violation_limit: str = "5/hour"
    # How long a negotiation thread (and the opener's hold) lasts without a seal.
    thread_ttl_days: int = Field(default=7, ge=1, le=365)
    # How long a listing stays live after posting.
    listing_ttl_days: int = Field(default=7, ge=1, le=365)
    idempotency_retention_hours: int = Field(default=24, ge=1)
    # The broker's fee on an escrow release, in basis points of the seller's share.
    escrow_fee_bps: int = Field(default=100, ge=0, le=10_000)
    # How long every account's events stay readable (GET /v1/events and its stream).
    event_retention_hours: int = Field(default=72, ge=1, le=24 * 90)
    # An event stream ends after this long; the client reconnects with Last-Event-ID (a
    # browser's EventSource does so by itself), so no connection outlives a deploy.
    event_stream_seconds: float = Field(default=300, gt=0, le=3600)
    sqlite_busy_timeout_ms: int = Field(default=15000, ge=0)
    db_pool_size: int = Field(default=10, ge=1)
    # PostgreSQL only (SQLite's work always runs inline): where a request's database work
    # runs. "inline": on the worker's event loop, one write transaction at a time per
    # worker (run several workers); "threads": on a few threads per worker, several write
    # transactions at once (agent_broker.db.dispatch).
    db_dispatch: Literal["inline", "threads"] = "inline"
    # PostgreSQL only, in milliseconds (0: no limit), set on each connection as it opens
    # (agent_broker.db.timeouts): how long one statement may run and how long it may wait
    # for a lock before the server cancels it, and the request answers 503. Jobs and the
    # CLI have the longer statement limit (the ledger sealer reads the whole journal); keep
    # it below the job lease (10 minutes).
    db_statement_timeout_ms: int = Field(default=5000, ge=0)
    db_lock_timeout_ms: int = Field(default=2000, ge=0)
    db_job_statement_timeout_ms: int = Field(default=300000, ge=0)
    log_level: str = "INFO"
    # Run the scheduled jobs inside `serve` (one replica at a time holds each lease).
    jobs_enabled: bool = True
    # How often `serve`'s scheduler looks for due jobs.
    jobs_tick_seconds: float = Field(default=15.0, gt=0, le=3600)
    # Serve Prometheus metrics at /metrics (404 when off).
    metrics_enabled: bool = False
    # Routes laid out flat, matched by index and served by handlers planned at startup
    # (agent_broker.http.routing); off: FastAPI's own matching and request handling, the
    # same answers, slower. For ruling the speed layer out, or a FastAPI release it was not
    # written for (agent_broker.http.fastapi_internals).
    planned_routes: bool = True
    # Set only for local testing: lets outbound fetches reach private and loopback
    # addresses (and plain http). Refused in production.
    allow_private_fetch: bool = False
    # Extra PEM roots trusted for outbound HTTPS, beside the public ones.
    outbound_ca_bundle: str = ""
    # Testing only, refused in production: comma-separated `host=address[:port]` overrides
    # of DNS for outbound fetches.
    outbound_resolve: str = ""
    # Dashboard sessions: identity-provider JWTs (RS256). All three set, or none (sessions
    # off). The JWKS URL may be file:// (air-gapped deployments, tests).
    idp_issuer: str = ""
    idp_audience: str = ""
    idp_jwks_url: str = ""
    # Agent OAuth access tokens (RS256 JWTs with a space-separated `scope` and a `jti`): the
    # same rules as the identity provider's.
    oauth_issuer: str = ""
    oauth_audience: str = ""
    oauth_jwks_url: str = ""
    # Processors (docs/operators/payments.md). processor_a: a Lightning hosted-charge API
    # (create a charge, callback signed with HMAC-SHA256 of the raw body);
    # processor_b: an address-forwarding gateway (callbacks from its published addresses).
    processor_a_api_url: str = ""
    processor_a_api_key: str = ""
    processor_a_webhook_secret: str = ""
    processor_b_api_url: str = ""
    processor_b_callback_sources: str = "51.77.105.132,135.125.112.47"
    # Where processor_b forwards each chain's payments; a chain without one is not offered.
    processor_b_address_usdttrc20: str = ""
    processor_b_address_usdterc20: str = ""
    processor_b_address_usdc: str = ""
    processor_b_address_usdcsol: str = ""
    processor_b_address_usdtpolygon: str = ""
    processor_b_address_usdcpolygon: str = ""
    processor_b_address_usdcbase: str = ""
    # Domain proof: the one-time welcome credit (0 grants nothing) and how many grants
    # the deployment pays per UTC day (beyond it a proved claim waits for the next day).
    domain_grant_micro: int = Field(default=DOMAIN_GRANT_MICRO, ge=0)
    domain_grant_daily_cap: int = Field(default=100, ge=0)
    # Verify calls per account (each may fetch from the account's domain), `limits` notation.
    domain_verify_rate_limit: str = "10/hour"
    # Free certification tests per account (each probes a host the caller chose).
    certification_test_rate_limit: str = "6/hour"
    # How many deal routes the certification-checks job probes at once.
    certification_check_concurrency: int = Field(default=8, ge=1, le=100)
    # x402 payments on the payable routes (docs/operators/payments.md, "x402"). Off: no
    # manifest and the payable routes answer 401 without a key, as without payments.
    x402_enabled: bool = False
    x402_facilitator_url: str = ""
    # The wallet the payments are made out to (0x + 40 hex).
    x402_pay_to: str = ""
    x402_network: Literal["base", "base-sepolia"] = "base"
    # The token contract; empty = USDC on the chosen network. Another token must have 6
    # decimals (one unit = 1 µUSD) and its EIP-712 domain name and version set below.
    x402_asset: str = ""
    x402_asset_name: str = ""
    x402_asset_version: str = ""
    # x402 payment attempts (`limits` notation), counted per source address and, once the
    # signature is checked, per paying wallet: each costs a claim and a facilitator call.
    x402_attempt_rate_limit: str = "60/hour"
    # Invoices per account (`limits` notation): each one asks the processor for a charge.
    invoice_rate_limit: str = "20/hour"
    # Where the terms a payment accepts are published (the manifest's termsUrl); empty = none.
    terms_url: str = ""
    # Largest request body accepted (413 beyond). The worst valid listing, 10,000 body and
    # 200 title characters outside the BMP each sent as a JSON surrogate-pair escape (12
    # bytes), is about 123 kB.
    max_body_bytes: int = Field(default=262144, ge=1024, le=16 * 1024 * 1024)
    # How long a client may take to send its whole body (408 after).
    body_timeout_seconds: float = Field(default=10.0, gt=0, le=300)

    # Whether database_url is the development default (production refuses it).
    _default_database: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _resolve_paths(self) -> Settings:
        # Absolute once read, so that every command and worker names the same files.
        self.var_dir = os.path.abspath(os.path.expanduser(self.var_dir or default_var_dir()))
        if not self.database_url:
            self.database_url = f"sqlite:///{Path(self.var_dir) / 'broker.db'}"
            self._default_database = True
        return self

    @field_validator(*RATE_LIMIT_SETTINGS)
    @classmethod
    def _check_rate_limit(cls, value: str) -> str:
        parse_rate_limit(value)
        return value

    @field_validator("log_level")
    @classmethod
    def _check_log_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)} (in any case)")
        return value.upper()

    @field_validator("signing_key", "card_signing_key")
    @classmethod
    def _check_signing_key(cls, value: str) -> str:
        if value:  # empty: the development key file (production refuses it below)
            parse_signing_key(value)
        return value

    @model_validator(mode="after")
    def _check_trusted_proxies(self) -> Settings:
        try:
            _ = self.trusted_proxy_networks
        except ValueError:
            raise ValueError(
                "BROKER_TRUSTED_PROXIES must be comma-separated IP addresses or CIDR ranges"
            ) from None
        return self

    @model_validator(mode="after")
    def _check_processor_sources(self) -> Settings:
        try:
            _ = self.processor_b_source_networks
        except ValueError:
            raise ValueError(
                "BROKER_PROCESSOR_B_CALLBACK_SOURCES must be comma-separated addresses or CIDRs"
            ) from None
        return self

    @cached_property
    def processor_b_source_networks(self) -> tuple[ipaddress._BaseNetwork, ...]:
        parts = [p.strip() for p in self.processor_b_callback_sources.split(",") if p.strip()]
        return tuple(ipaddress.ip_network(p, strict=False) for p in parts)

    def processor_b_address(self, chain: str) -> str:
        return str(getattr(self, f"processor_b_address_{chain}", "") or "")

    @property
    def processor_a_configured(self) -> bool:
        return bool(
            self.processor_a_api_url
            and self.processor_a_api_key
            and self.processor_a_webhook_secret
        )

    @model_validator(mode="after")
    def _check_token_issuers(self) -> Settings:
        schemes = ("https://", "file://") + (("http://",) if self.env != "production" else ())
        for prefix, values in (
            ("IDP", (self.idp_issuer, self.idp_audience, self.idp_jwks_url)),
            ("OAUTH", (self.oauth_issuer, self.oauth_audience, self.oauth_jwks_url)),
        ):
            if any(values) and not all(values):
                raise ValueError(
                    f"BROKER_{prefix}_ISSUER, BROKER_{prefix}_AUDIENCE and "
                    f"BROKER_{prefix}_JWKS_URL are set together or not at all"
                )
            if values[2] and not values[2].startswith(schemes):
                raise ValueError(f"BROKER_{prefix}_JWKS_URL must be an https:// or file:// URL")
        return self

    @model_validator(mode="after")
    def _check_x402(self) -> Settings:
        if not self.x402_enabled:
            return self
        schemes = ("https://",) + (("http://",) if self.env != "production" else ())
        if not self.x402_facilitator_url.startswith(schemes):
            raise ValueError("BROKER_X402_FACILITATOR_URL must be an https:// URL when x402 is on")
        if not _is_evm_address(self.x402_pay_to):
            raise ValueError("BROKER_X402_PAY_TO must be an address (0x and 40 hex digits)")
        if self.x402_asset and not _is_evm_address(self.x402_asset):
            raise ValueError("BROKER_X402_ASSET must be an address (0x and 40 hex digits)")
        if self.x402_asset and not (self.x402_asset_name and self.x402_asset_version):
            raise ValueError(
                "BROKER_X402_ASSET_NAME and BROKER_X402_ASSET_VERSION (the token's EIP-712 "
                "domain) are needed with BROKER_X402_ASSET"
            )
        return self

    @property
    def oauth_enabled(self) -> bool:
        return bool(self.oauth_jwks_url)

    @property
    def sessions_enabled(self) -> bool:
        return bool(self.idp_jwks_url)

    @model_validator(mode="after")
    def _check_outbound_resolve(self) -> Settings:
        try:
            parse_resolve(self.outbound_resolve)
        except ValueError as exc:
            raise ValueError(f"BROKER_OUTBOUND_RESOLVE: {exc}") from None
        return self

    @model_validator(mode="after")
    def _refuse_development_secrets_in_production(self) -> Settings:
        if self.env != "production":
            return self
        problems = []
        if self.key_hash_secret == DEV_KEY_HASH_SECRET or len(self.key_hash_secret) < 32:
            problems.append("BROKER_KEY_HASH_SECRET must be set to a secret of 32+ characters")
        if not self.signing_key:
            problems.append("BROKER_SIGNING_KEY must be set")
        if not self.card_signing_key:
            problems.append("BROKER_CARD_SIGNING_KEY must be set")
        if self._default_database:
            problems.append("BROKER_DATABASE_URL must be set explicitly")
        if self.allow_private_fetch:
            problems.append("BROKER_ALLOW_PRIVATE_FETCH must be off")
        if self.outbound_resolve:
            problems.append("BROKER_OUTBOUND_RESOLVE is for testing and must be unset")
        if problems:
            raise ValueError("production refuses development defaults: " + "; ".join(problems))
        return self

    @property
    def listing_ttl(self) -> timedelta:
        return timedelta(days=self.listing_ttl_days)

    @property
    def thread_ttl(self) -> timedelta:
        return timedelta(days=self.thread_ttl_days)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def effective_bindings_base(self) -> str:
        return (self.bindings_base or f"{self.public_base_url.rstrip('/')}/bindings").rstrip("/")

    @cached_property
    def trusted_proxy_networks(self) -> tuple[ipaddress._BaseNetwork, ...]:
        parts = [p.strip() for p in self.trusted_proxies.split(",") if p.strip()]
        return tuple(ipaddress.ip_network(p, strict=False) for p in parts)
