"""The agent-broker command."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError

from agent_broker.client.cli import agent_app
from agent_broker.config import Settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from agent_broker.db.engine import Database

app = typer.Typer(
    help="agent-broker: a marketplace broker for automated agents.", no_args_is_help=True
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
admin_app = typer.Typer(help="Operator actions.", no_args_is_help=True)
jobs_app = typer.Typer(help="Scheduled jobs.", no_args_is_help=True)
keys_app = typer.Typer(help="Token signing keys.", no_args_is_help=True)
ledger_app = typer.Typer(help="Ledger integrity.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(admin_app, name="admin")
app.add_typer(jobs_app, name="jobs")
app.add_typer(keys_app, name="keys")
app.add_typer(ledger_app, name="ledger")
app.add_typer(agent_app, name="agent")


NOT_MIGRATED = "database is not migrated; run `agent-broker db upgrade`"


def _settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        # One line per rejected setting, never its value: a BROKER_* value may be a secret.
        for line in _setting_errors(exc):
            typer.echo(f"configuration error: {line}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from None


def _setting_errors(exc: ValidationError) -> list[str]:
    prefix = Settings.model_config.get("env_prefix", "")
    lines = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        message = error["msg"].removeprefix("Value error, ")
        field = "_".join(str(part) for part in error["loc"])
        lines.append(f"{prefix}{field.upper()}: {message}" if field else message)
    return lines


def _open_database(settings: Settings) -> Database:
    """The database, once it is known to carry this release's schema; otherwise one line
    saying so and exit 1, rather than a traceback from the first missing table. The
    commands' work is the operator's, run with the jobs' longer statement limit."""
    from sqlalchemy.exc import OperationalError

    from agent_broker.db.engine import create_database
    from agent_broker.migrations.migrate import is_migrated

    db = create_database(settings, work="jobs")
    try:
        migrated = is_migrated(db)
    except OperationalError as exc:
        db.dispose()
        # The driver's own first line (refused, unknown host, bad file); never the URL.
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        typer.echo(f"cannot reach the database: {reason}", err=True)
        raise typer.Exit(1) from None
    except BaseException:
        db.dispose()
        raise
    if not migrated:
        db.dispose()
        typer.echo(NOT_MIGRATED, err=True)
        raise typer.Exit(1)
    return db


def _note_how_workers_write(settings: Settings, workers: int) -> None:
    """Warn (in the service's JSON log) of a worker count that wastes the database's
    write concurrency."""
    import structlog

    from agent_broker.logging import configure as configure_logging

    if settings.is_sqlite and workers > 1:
        detail = (
            "several workers on SQLite serialise on the database lock; "
            "use PostgreSQL for real concurrency"
        )
    elif not settings.is_sqlite and workers == 1 and settings.db_dispatch == "inline":
        detail = (
            "one worker runs its database writes one at a time (BROKER_DB_DISPATCH=inline); "
            "use --workers 2 or more, or BROKER_DB_DISPATCH=threads"
        )
    else:
        return
    configure_logging(settings.log_level)
    structlog.get_logger("agent_broker.serve").warning("serve_workers_note", detail=detail)


def event_loop_for(workers: int) -> str:
    """uvicorn's event loop for `serve --workers N`. uvloop (libuv 1.45 and later) accepts
    one waiting connection per turn of the loop, so on a busy worker a burst of new
    connections waits in line: each turn first serves every connection already open (one
    worker, 64 connections opened at once: p99 170-450 ms against 12-31 ms on asyncio's
    loop, which accepts every waiting connection in one turn, at equal throughput). Several
    workers keep uvloop: the PostgreSQL deal cycle with two workers ran a fifth to a
    quarter slower on asyncio's loop (docs/decisions.md)."""
    return "asyncio" if workers == 1 else "auto"


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8080, help="Port to bind."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    no_migrate: bool = typer.Option(False, "--no-migrate", help="Skip applying migrations."),
) -> None:
    """Serve the API (migrating the database first)."""
    import uvicorn

    from agent_broker.migrations.migrate import upgrade

    settings = _settings()
    if not no_migrate:
        upgrade(settings.database_url)
    else:
        # Refuse to start rather than answer 500 to every request.
        _open_database(settings).dispose()
    _note_how_workers_write(settings, workers)
    uvicorn.run(
        "agent_broker.app:app_factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        access_log=False,
        log_level=settings.log_level.lower(),
        loop=event_loop_for(workers),
    )


@app.command("mcp")
def mcp() -> None:
    """Serve the MCP tools over stdio (the account's key in BROKER_API_KEY; logs on stderr)."""
    import os

    import anyio

    from agent_broker.app import create_app
    from agent_broker.mcp_tools.server import STDIO_KEY_VARIABLE, build_server

    settings = _settings()
    _open_database(settings).dispose()
    app = create_app(settings, run_jobs=False)
    server = build_server(app, stdio_key=os.environ.get(STDIO_KEY_VARIABLE) or None)

    async def serve_stdio() -> None:
        # The app's start-up registers the signing key, as `serve` does.
        async with app.router.lifespan_context(app):
            await server.run_stdio_async()

    anyio.run(serve_stdio)


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply migrations."""
    from agent_broker.migrations.migrate import upgrade

    upgrade(_settings().database_url, revision)
    typer.echo("database is up to date")


@admin_app.command("credit")
def admin_credit(
    account_id: str,
    amount_micro: int,
    reason: str = typer.Option(..., "--reason", help="Why; kept in the journal."),
    real_money: bool = typer.Option(False, "--real-money", help="Also mark the account funded."),
) -> None:
    """Credit an account (journalled)."""
    from agent_broker import clock
    from agent_broker.ledger import books
    from agent_broker.ledger.service import credit, wallet

    if amount_micro <= 0:
        typer.echo("AMOUNT_MICRO must be a positive integer", err=True)
        raise typer.Exit(2)
    _require_uuid(account_id)
    if not reason.strip():
        typer.echo("--reason must not be empty", err=True)
        raise typer.Exit(2)
    with _account_transaction(account_id) as session:
        now = clock.now()
        credit(
            session,
            account_id,
            amount_micro,
            source=books.OPERATOR,
            kind="admin_credit",
            memo=reason.strip(),
            now=now,
            real_money=real_money,
        )
        view = wallet(session, account_id, now=now)
    typer.echo(
        f"credited {amount_micro} µUSD to {account_id}; balance_micro={view.spendable_micro}"
        f" funded={str(view.funded).lower()}"
    )


@admin_app.command("x402-pending")
def admin_x402_pending(
    older_than_minutes: int = typer.Option(
        5, "--older-than", min=0, help="Only claims at least this many minutes old."
    ),
) -> None:
    """List x402 payments kept for reconciliation: `pending` ones, whose settlement is
    unknown (the facilitator did not answer, or answered that the transfer is pending),
    and `mismatch` ones, settled otherwise than their authorization says (another payer,
    network or amount). Check each on chain, and credit a transfer that happened and is
    owed with `admin credit --real-money`. Nothing was credited for them, and each
    authorization stays refused (409 x402_payment_replay)."""
    from datetime import timedelta

    from agent_broker import clock
    from agent_broker.payments.x402.service import pending_claims

    db = _open_database(_settings())
    try:
        with db.reader() as session:
            before = clock.now() - timedelta(minutes=older_than_minutes)
            claims = pending_claims(session, before=before)
    finally:
        db.dispose()
    if not claims:
        typer.echo("no x402 payment awaits reconciliation")
        return
    for claim in claims:
        typer.echo(
            f"{claim.id}\t{claim.status}\t{claim.claimed_at.isoformat()}\t{claim.network}"
            f"\t{claim.payer}\t{claim.amount_micro} µUSD\tnonce {claim.nonce}"
            f"\ttransaction {claim.transaction or '-'}\t{claim.note or ''}"
        )


@admin_app.command("link-identity")
def admin_link_identity(
    account_id: str,
    issuer: str = typer.Option(..., "--issuer", help="The identity provider's issuer (iss)."),
    subject: str = typer.Option(..., "--subject", help="The operator's subject (sub)."),
) -> None:
    """Let an identity-provider subject reach an account through dashboard sessions."""
    from agent_broker import clock
    from agent_broker.accounts import identities

    _require_uuid(account_id)
    if not issuer.strip() or not subject.strip():
        typer.echo("--issuer and --subject must not be empty", err=True)
        raise typer.Exit(2)
    with _account_transaction(account_id) as session:
        # The settings name the OAuth issuer, for the kind the new link's event tells.
        linked = identities.link(
            session, issuer, subject, account_id, now=clock.now(), settings=_settings()
        )
    if linked != account_id:
        typer.echo(f"identity already linked to another account: {linked}", err=True)
        raise typer.Exit(1)
    typer.echo(f"identity {issuer} {subject} reaches account {account_id}")


@contextmanager
def _account_transaction(account_id: str) -> Iterator[Session]:
    """A write transaction on the database, committed when the block ends, once the
    account is known to exist (exit 1 otherwise)."""
    from agent_broker.accounts.models import Account

    db = _open_database(_settings())
    try:
        with db.writer() as session:
            if session.get(Account, account_id) is None:
                typer.echo(f"no account {account_id}", err=True)
                raise typer.Exit(1)
            yield session
            session.commit()
    finally:
        db.dispose()


def _require_uuid(account_id: str) -> None:
    try:
        uuid.UUID(account_id)
    except ValueError:
        typer.echo("ACCOUNT_ID must be an account UUID", err=True)
        raise typer.Exit(2) from None


@jobs_app.command("list")
def jobs_list() -> None:
    """List jobs: name, then period in seconds, then what it does."""
    from agent_broker.jobs.registry import JOBS

    for job in JOBS.values():
        typer.echo(f"{job.name}\t{int(job.period.total_seconds())}s\t{job.description}")


@jobs_app.command("run")
def jobs_run(name: str) -> None:
    """Run one job once (cron-friendly)."""
    from agent_broker.jobs.registry import JOBS
    from agent_broker.jobs.runner import run_job

    if name not in JOBS:
        typer.echo(f"unknown job {name!r}; known: {', '.join(JOBS)}", err=True)
        raise typer.Exit(2)
    settings = _settings()
    db = _open_database(settings)
    try:
        outcome = run_job(db, settings, name)
    finally:
        db.dispose()
    if outcome is None:
        typer.echo(f"{name}: another runner holds the lease; nothing done", err=True)
        raise typer.Exit(3)
    typer.echo(f"{name}: {outcome}")


@keys_app.command("rotate")
def keys_rotate() -> None:
    """Start signing with a new Ed25519 key; the old one stays published for 7 days."""
    from agent_broker import clock
    from agent_broker.tokens import keys, registry

    settings = _settings()
    if settings.signing_key:
        # The secret lives in the environment: nothing is written; the new key is published
        # by the first process that starts with it.
        new = keys.generate()
        typer.echo(keys.secret_hex(new))
        typer.echo(
            f"Set BROKER_SIGNING_KEY to the line above (kid {new.kid}) and restart every "
            "worker; the old key stays published for 7 days.",
            err=True,
        )
        return
    # Checked first: the key file is not rotated for a database that cannot record it.
    db = _open_database(settings)
    try:
        old, new = keys.rotate_key_file(keys.key_file(settings.var_dir))
        with db.writer() as session:
            registry.register_current(session, new, now=clock.now())
            session.commit()
    finally:
        db.dispose()
    retired = f"; {old.kid} retired, published for 7 more days" if old else ""
    typer.echo(f"signing key {new.kid} is current{retired}; restart the service to sign with it")


@keys_app.command("list")
def keys_list() -> None:
    """List signing keys: kid, current or retired, activated, retired, published until."""
    from agent_broker.clock import rfc3339
    from agent_broker.tokens import registry

    db = _open_database(_settings())
    try:
        with db.reader() as session:
            rows = registry.all_keys(session)
    finally:
        db.dispose()
    if not rows:
        typer.echo("no signing keys yet; the service registers its key when it starts", err=True)
    for row in rows:
        retired = row.retired_at
        typer.echo(
            f"{row.kid}\t{'retired' if retired else 'current'}"
            f"\tactivated={rfc3339(row.activated_at)}"
            f"\tretired={rfc3339(retired) if retired else '-'}"
            f"\tpublished_until={rfc3339(retired + registry.TOKEN_TTL) if retired else '-'}"
        )


# Problems printed by `ledger check`; all are counted in its summary.
LEDGER_CHECK_LISTED = 10_000


@ledger_app.command("check")
def ledger_check() -> None:
    """Check the ledger now: verify the hash chain, compare it with the stored verdict's
    high-water mark, and reconcile wallet balances, held amounts and thread holds.

    Prints one line per problem (kind, journal sequence or -, detail naming the wallet,
    hold or thread by id; at most 10,000), then a one-line summary. The public verdict
    names them by `ref` and the first 12 hex of the SHA-256 of that id instead.
    Read-only: it seals nothing and stores no verdict, so GET /v1/ledger/verify keeps
    serving the one the ledger-seal job stored last.

    Exit status: 0 no problem; 1 a problem was found; 2 configuration error.
    """
    from agent_broker.ledger.audit import audit

    db = _open_database(_settings())
    try:
        found = audit(db.engine, listed=LEDGER_CHECK_LISTED, reveal_ids=True).found
    finally:
        db.dispose()
    for problem in found.problems:
        sequence = "-" if problem.sequence is None else problem.sequence
        typer.echo(f"{problem.kind}\t{sequence}\t{problem.detail}")
    unlisted = found.problem_count - len(found.problems)
    if unlisted:
        typer.echo(f"... {unlisted} more problems not listed")
    head = "nothing sealed" if found.head is None else f"chain head at row {found.head[0]}"
    count = found.problem_count
    status = "broken" if count else "ok"
    typer.echo(f"ledger {status}: {head}; {count} problem{'' if count == 1 else 's'}")
    if found.problem_count:
        raise typer.Exit(1)


@app.command("verify-proof")
def verify_proof(
    token: str = typer.Argument(..., help="The reputation proof (PASETO v4.public) presented."),
    nonce: str = typer.Option(
        ..., "--nonce", help="The nonce you issued for this exchange (32 lowercase hex)."
    ),
    audience: str = typer.Option(
        ..., "--audience", help="Your own https origin, as the proof must name it."
    ),
    service: str | None = typer.Option(
        None,
        "--service",
        help="Base URL of the broker whose key document verifies the proof "
        "[default: BROKER_PUBLIC_BASE_URL].",
    ),
) -> None:
    """Verify a reputation proof and print the record inside it as JSON.

    The five checks of the verifier procedure run in order: the signature against the key
    document fetched from the broker's own base URL (never a key named by the presenter),
    type svc.reputation-proof.v1, nonce, audience, expiry.

    This command keeps no nonce record: it can only check that the proof carries the nonce
    given with --nonce, not that you issued it or that it was not used before. A relying
    party must burn each nonce on first use itself (agent_broker.tokens.verify.ProofVerifier
    with a persistent NonceBook).

    Exit status: 0 verified; 1 refused (the reason goes to stderr); 2 bad arguments or
    configuration; 3 the key document could not be fetched.
    """
    from agent_broker.tokens.service import InvalidOrigin, TokenError, is_proof_nonce
    from agent_broker.tokens.verify import (
        KeyDocumentUnavailable,
        MemoryNonceBook,
        ProofVerifier,
        failed_step,
    )

    if not is_proof_nonce(nonce):
        typer.echo("--nonce must be exactly 32 lowercase hex characters", err=True)
        raise typer.Exit(2)
    base_url = service if service is not None else _settings().public_base_url
    book = MemoryNonceBook()
    book.remember(nonce)
    try:
        verifier = ProofVerifier(service_base_url=base_url, audience=audience, nonces=book)
    except InvalidOrigin as exc:
        typer.echo(f"--audience is not a usable https origin: {exc}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:
        typer.echo(f"--service: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        proof = verifier.verify(token, nonce=nonce)
    except TokenError as exc:
        step, name = failed_step(exc)
        typer.echo(f"proof refused at step {step} ({name}): {exc}", err=True)
        raise typer.Exit(3 if isinstance(exc, KeyDocumentUnavailable) else 1) from None
    typer.echo(json.dumps(proof.record, indent=2, ensure_ascii=False))


def main() -> None:
    app(prog_name="agent-broker")


if __name__ == "__main__":
    sys.exit(main())
