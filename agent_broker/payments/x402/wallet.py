"""Wallet key recovery. An account an x402 payment opened has its key only in that first
paid answer; the holder of the paying wallet gets a new one by signing an EIP-4361 "Sign-In
with Ethereum" message (`POST /v1/account/wallet/challenge`, then `/recover`).

The service issues the message (its domain, URI and chain, a random nonce, ten minutes of
life) and keeps the nonce with the message's digest. A recovery must present that very
text, signed by the address it names (an EIP-191 personal signature, as wallets make for
Sign-In with Ethereum; contract wallets are not supported), before it expires. The nonce is
burnt in the transaction that rotates the key, so of two recoveries with one message
exactly one succeeds. The rotation is the dashboard's, made as with the key: the old key
is refused at once, the account's session and OAuth links go, the wallet link stays, a
disabled account is active again.

Whether a wallet reaches an account is told only to whoever proves to hold it: a challenge
is issued for any address, and an unknown wallet is 404 only once the signature checks.

The EIP-4361 text is parsed here, strictly (docs/decisions/identity-and-sessions.md: the
`siwe` package pins older eth-account and web3 than the service)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from agent_broker import clock
from agent_broker.accounts import identities
from agent_broker.accounts import service as accounts
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.payments.x402 import repository
from agent_broker.payments.x402.offers import Terms
from agent_broker.problems import InvalidInput, NotFound

LIFETIME = timedelta(minutes=10)
VERSION = "1"
STATEMENT = (
    "Recover the API key of the account this wallet pays for: the account gets a new key "
    "and its sessions are signed out."
)
# Rate-limit names: challenges and recoveries per source address, recoveries per wallet.
CHALLENGE_LIMIT = "wallet-challenge"
RECOVER_LIMIT = "wallet-recover"
RECOVER_WALLET_LIMIT = "wallet-recover-wallet"
MAX_MESSAGE_CHARS = 4096

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_SIGNATURE = re.compile(r"(0x)?[0-9a-fA-F]{130}")
_NONCE = re.compile(r"[A-Za-z0-9]{8,}")
_CHAIN_ID = re.compile(r"[1-9][0-9]{0,19}")
_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.IGNORECASE
)
_HEADER = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<domain>[^\s/?#@]+) wants you to sign in "
    r"with your Ethereum account:"
)


class RecoveryRefused(InvalidInput):
    """400 invalid_input; `check` (also in the problem body) names what failed: message,
    domain, uri, chain, version, expired, signature, nonce or used."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail, extra={"check": check})


@dataclass(frozen=True)
class SignInMessage:
    """An EIP-4361 message's fields (those this service issues, and the optional rest)."""

    domain: str
    address: str
    statement: str | None
    uri: str
    version: str
    chain_id: int
    nonce: str
    issued_at: datetime
    expiration_time: datetime | None = None
    not_before: datetime | None = None
    request_id: str | None = None
    resources: tuple[str, ...] = ()
    scheme: str | None = None

    def text(self) -> str:
        """The message as EIP-4361 writes it (what the wallet signs)."""
        lines = [
            f"{self.scheme + '://' if self.scheme else ''}{self.domain} wants you to sign in "
            "with your Ethereum account:",
            self.address,
            "",
            *([self.statement, ""] if self.statement is not None else [""]),
            f"URI: {self.uri}",
            f"Version: {self.version}",
            f"Chain ID: {self.chain_id}",
            f"Nonce: {self.nonce}",
            f"Issued At: {clock.rfc3339(self.issued_at)}",
        ]
        for label, moment in (
            ("Expiration Time", self.expiration_time),
            ("Not Before", self.not_before),
        ):
            if moment is not None:
                lines.append(f"{label}: {clock.rfc3339(moment)}")
        if self.request_id is not None:
            lines.append(f"Request ID: {self.request_id}")
        if self.resources:
            lines += ["Resources:", *(f"- {resource}" for resource in self.resources)]
        return "\n".join(lines)


def _bad(why: str) -> RecoveryRefused:
    return RecoveryRefused(
        "message", f"The message is not a Sign-In with Ethereum (EIP-4361) message: {why}."
    )


def _moment(value: str, label: str) -> datetime:
    if not _DATE_TIME.fullmatch(value):
        raise _bad(f"{label} is not an RFC 3339 date-time")
    try:
        return datetime.fromisoformat(value.upper())
    except ValueError:
        raise _bad(f"{label} is not an RFC 3339 date-time") from None


def _checksummed(address: str) -> bool:
    from eth_utils import is_checksum_address  # loads with eth-account, on first use

    return bool(is_checksum_address(address))


def parse(text: str) -> SignInMessage:
    """The fields of an EIP-4361 message, read strictly: every line in its place, LF line
    ends, nothing before or after."""
    if len(text) > MAX_MESSAGE_CHARS or "\r" in text:
        raise _bad("it is too long or has CR line ends")
    lines = text.split("\n")
    header = _HEADER.fullmatch(lines[0])
    if header is None:
        raise _bad("the first line is not '<domain> wants you to sign in with ...'")
    if len(lines) < 9 or not _ADDRESS.fullmatch(lines[1]) or lines[2] != "":
        raise _bad("the second line is not an address followed by an empty line")
    if not _checksummed(lines[1]):
        raise _bad("the address is not in its EIP-55 checksum form")
    statement = None
    at = 4
    if lines[3] != "":
        statement, at = lines[3], 5
        if lines[4] != "":
            raise _bad("the statement is not one line followed by an empty line")
    fields: dict[str, str] = {}
    resources: list[str] = []
    for label in (
        "URI",
        "Version",
        "Chain ID",
        "Nonce",
        "Issued At",
        "Expiration Time",
        "Not Before",
        "Request ID",
    ):
        prefix = f"{label}: "
        if at < len(lines) and lines[at].startswith(prefix):
            fields[label] = lines[at][len(prefix) :]
            at += 1
    if at < len(lines) and lines[at] == "Resources:":
        at += 1
        while at < len(lines) and lines[at].startswith("- "):
            resources.append(lines[at][2:])
            at += 1
    if at != len(lines):
        raise _bad(f"line {at + 1} is not a field in its place")
    missing = [f for f in ("URI", "Version", "Chain ID", "Nonce", "Issued At") if f not in fields]
    if missing:
        raise _bad(f"{', '.join(missing)} missing")
    if not _CHAIN_ID.fullmatch(fields["Chain ID"]):
        raise _bad("the chain id is not a number")
    if not _NONCE.fullmatch(fields["Nonce"]):
        raise _bad("the nonce is not 8 or more letters and digits")
    optional = {
        name: _moment(fields[label], label) if label in fields else None
        for name, label in (("expiration_time", "Expiration Time"), ("not_before", "Not Before"))
    }
    return SignInMessage(
        domain=header["domain"],
        address=lines[1],
        statement=statement,
        uri=fields["URI"],
        version=fields["Version"],
        chain_id=int(fields["Chain ID"]),
        nonce=fields["Nonce"],
        issued_at=_moment(fields["Issued At"], "Issued At"),
        request_id=fields.get("Request ID"),
        resources=tuple(resources),
        scheme=header["scheme"],
        **optional,
    )


@dataclass(frozen=True)
class Deployment:
    """What this deployment's messages say: where they are for, and on which chain."""

    domain: str  # the authority (host, and port if any) of BROKER_PUBLIC_BASE_URL
    uri: str
    chain_id: int

    @classmethod
    def of(cls, settings: Settings) -> Deployment:
        # The chain x402 payments are taken on, as the offers name it.
        uri = settings.public_base_url.rstrip("/")
        return cls(
            domain=urlsplit(uri).netloc, uri=uri, chain_id=Terms.from_settings(settings).chain_id
        )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _wallet(address: str) -> str:
    """A wallet address as given (any case; mixed case must be its EIP-55 form), or 400."""
    if not _ADDRESS.fullmatch(address):
        raise InvalidInput("address must be a wallet address: 0x and 40 hex digits.")
    mixed = address[2:] not in (address[2:].lower(), address[2:].upper())
    if mixed and not _checksummed(address):
        raise InvalidInput("address is in mixed case but not its EIP-55 checksum form.")
    return address


def _message_for(settings: Settings, address: str, *, now: datetime) -> SignInMessage:
    from eth_utils import to_checksum_address

    deployment = Deployment.of(settings)
    issued_at = now.replace(microsecond=0)
    return SignInMessage(
        domain=deployment.domain,
        address=to_checksum_address(_wallet(address)),
        statement=STATEMENT,
        uri=deployment.uri,
        version=VERSION,
        chain_id=deployment.chain_id,
        nonce=secrets.token_hex(16),
        issued_at=issued_at,
        expiration_time=issued_at + LIFETIME,
    )


def _issue(session: Session, message: SignInMessage, *, now: datetime) -> dict:
    text, expires_at = message.text(), message.expiration_time
    assert expires_at is not None
    repository.delete_expired_challenges(session, now=now)
    repository.insert_challenge(session, message.nonce, digest=_digest(text), expires_at=expires_at)
    return {"message": text, "expires_at": clock.rfc3339(expires_at)}


async def challenge(
    db: Database,
    settings: Settings,
    limiter: RateLimiter,
    address: str,
    *,
    source: str,
    now: datetime,
) -> dict:
    limiter.hit(CHALLENGE_LIMIT, settings.wallet_recovery_rate_limit, source)
    # Off the event loop: the first call loads eth-account and x402's chain names.
    message = await run_in_threadpool(_message_for, settings, address, now=now)
    async with transaction(db, write=True) as session:
        return await run(session, _issue, session, message, now=now)


def checked(settings: Settings, text: str, *, now: datetime) -> SignInMessage:
    """The message, if it is for this deployment and current (its signature and nonce are
    checked next)."""
    message = parse(text)
    here = Deployment.of(settings)
    foreign_scheme = message.scheme and not here.uri.startswith(f"{message.scheme}://")
    if message.domain != here.domain or foreign_scheme:
        raise RecoveryRefused(
            "domain", f"The message is for {message.domain}, not this service ({here.domain})."
        )
    if message.uri != here.uri:
        raise RecoveryRefused("uri", f"The message's URI is {message.uri}, not {here.uri}.")
    if message.chain_id != here.chain_id:
        raise RecoveryRefused(
            "chain", f"The message is for chain {message.chain_id}, not {here.chain_id}."
        )
    if message.version != VERSION:
        raise RecoveryRefused("version", f"The message's version is {message.version}, not 1.")
    if message.expiration_time is None:
        raise RecoveryRefused(
            "nonce", "The message has no expiration time: it was not issued here."
        )
    if message.expiration_time <= now:
        raise RecoveryRefused(
            "expired",
            f"The message expired at {clock.rfc3339(message.expiration_time)}; ask for a new "
            "challenge.",
        )
    if message.not_before is not None and message.not_before > now:
        raise RecoveryRefused("nonce", "The message is not valid yet: it was not issued here.")
    return message


def signer(text: str, signature: str) -> str | None:
    """The address whose key made this EIP-191 personal signature of `text`, or None for a
    signature that recovers none."""
    from eth_account import Account
    from eth_account.messages import encode_defunct
    from eth_keys.exceptions import BadSignature
    from eth_utils.exceptions import ValidationError

    if not _SIGNATURE.fullmatch(signature):
        return None
    try:
        return str(Account.recover_message(encode_defunct(text=text), signature=signature))
    except (BadSignature, ValidationError, ValueError):
        return None


def verified(settings: Settings, text: str, signature: str, *, now: datetime) -> SignInMessage:
    """The message, if it is for this deployment, current, and signed by its address."""
    message = checked(settings, text, now=now)
    recovered = signer(text, signature)
    if recovered is None or recovered.lower() != message.address.lower():
        raise RecoveryRefused(
            "signature",
            "The signature does not recover the message's address: sign the message, as "
            "given, with that wallet (EIP-191 personal_sign).",
        )
    return message


def _recover(
    session: Session, settings: Settings, message: SignInMessage, text: str, *, now: datetime
) -> dict[str, Any]:
    issued = repository.challenge_digest(session, message.nonce)
    if issued is None:
        raise RecoveryRefused("nonce", "The message's nonce was not issued by this service.")
    if not hmac.compare_digest(issued, _digest(text)):
        raise RecoveryRefused("nonce", "The message is not the one issued with its nonce.")
    account_id = identities.linked_account(
        session, identities.WALLET_ISSUER, message.address.lower()
    )
    if account_id is None:
        raise NotFound("No account is linked to this wallet (it has made no x402 payment here).")
    if not repository.burn_challenge(session, message.nonce, now=now):
        raise RecoveryRefused("used", "The message was already used; ask for a new challenge.")
    rotated = accounts.rotate_key(session, settings, account_id)
    return {"account_id": account_id, "api_key": rotated["api_key"]}


async def recover(
    db: Database,
    settings: Settings,
    limiter: RateLimiter,
    text: str,
    signature: str,
    *,
    source: str,
    now: datetime,
) -> dict[str, Any]:
    limit = settings.wallet_recovery_rate_limit
    limiter.hit(RECOVER_LIMIT, limit, source)
    # Off the event loop: recovering a public key is milliseconds of arithmetic.
    message = await run_in_threadpool(verified, settings, text, signature, now=now)
    # Counted once the wallet is proved: nobody else can spend a wallet's recoveries.
    limiter.hit(RECOVER_WALLET_LIMIT, limit, message.address.lower())
    async with transaction(db, write=True) as session:
        return await run(session, _recover, session, settings, message, text, now=now)
