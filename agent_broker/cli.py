"""The agent-broker command."""

from __future__ import annotations

import json
import sys
import uuid

import typer

from agent_broker.config import Settings

app = typer.Typer(
    help="agent-broker: a marketplace broker for automated agents.", no_args_is_help=True
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
admin_app = typer.Typer(help="Operator actions.", no_args_is_help=True)
jobs_app = typer.Typer(help="Scheduled jobs.", no_args_is_help=True)
keys_app = typer.Typer(help="Token signing keys.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(admin_app, name="admin")
app.add_typer(jobs_app, name="jobs")
app.add_typer(keys_app, name="keys")


def _settings() -> Settings:
    try:
        return Settings()
    except ValueError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8080, help="Port to bind."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    no_migrate: bool = typer.Option(False, "--no-migrate", help="Skip applying migrations."),
) -> None:
    """Serve the API (migrating the database first)."""
    import uvicorn

    from agent_broker.db.migrate import upgrade

    settings = _settings()
    if not no_migrate:
        upgrade(settings.database_url)
    if settings.is_sqlite and workers > 1:
        typer.echo(
            "note: several workers on SQLite serialise on the database lock; "
            "use PostgreSQL for real concurrency",
            err=True,
        )
    uvicorn.run(
        "agent_broker.app:app_factory",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        access_log=False,
        log_level=settings.log_level.lower(),
    )


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Argument("head")) -> None:
    """Apply migrations."""
    from agent_broker.db.migrate import upgrade

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
    from agent_broker.accounts.models import Account
    from agent_broker.db.engine import create_database
    from agent_broker.ledger import books
    from agent_broker.ledger.service import credit, wallet

    if amount_micro <= 0:
        typer.echo("AMOUNT_MICRO must be a positive integer", err=True)
        raise typer.Exit(2)
    try:
        uuid.UUID(account_id)
    except ValueError:
        typer.echo("ACCOUNT_ID must be an account UUID", err=True)
        raise typer.Exit(2) from None
    if not reason.strip():
        typer.echo("--reason must not be empty", err=True)
        raise typer.Exit(2)
    db = create_database(_settings())
    try:
        with db.writer() as session:
            if session.get(Account, account_id) is None:
                typer.echo(f"no account {account_id}", err=True)
                raise typer.Exit(1)
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
            session.commit()
    finally:
        db.dispose()
    typer.echo(
        f"credited {amount_micro} µUSD to {account_id}; balance_micro={view.spendable_micro}"
        f" funded={str(view.funded).lower()}"
    )


@jobs_app.command("list")
def jobs_list() -> None:
    """List jobs: name, then period in seconds, then what it does."""
    from agent_broker.jobs.registry import JOBS

    for job in JOBS.values():
        typer.echo(f"{job.name}\t{int(job.period.total_seconds())}s\t{job.description}")


@jobs_app.command("run")
def jobs_run(name: str) -> None:
    """Run one job once (cron-friendly)."""
    from agent_broker.db.engine import create_database
    from agent_broker.jobs.registry import JOBS
    from agent_broker.jobs.runner import run_job

    if name not in JOBS:
        typer.echo(f"unknown job {name!r}; known: {', '.join(JOBS)}", err=True)
        raise typer.Exit(2)
    settings = _settings()
    db = create_database(settings)
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
    from agent_broker.db.engine import create_database
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
    old, new = keys.rotate_key_file(keys.key_file(settings.var_dir))
    db = create_database(settings)
    try:
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
    from agent_broker.db.engine import create_database
    from agent_broker.tokens import registry

    db = create_database(_settings())
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
