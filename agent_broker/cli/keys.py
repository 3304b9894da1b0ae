"""`agent-broker keys`: the token signing keys, rotated or listed."""

from __future__ import annotations

import typer

from agent_broker.cli.common import load_settings, open_database, signing_key_errors

keys_app = typer.Typer(help="Token signing keys.", no_args_is_help=True)


@keys_app.command("rotate")
def keys_rotate() -> None:
    """Start signing with a new Ed25519 key; the old one stays published for 7 days."""
    from agent_broker import clock
    from agent_broker.tokens import keys, registry

    settings = load_settings()
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
    db = open_database(settings)
    try:
        with signing_key_errors():  # a key file that holds no key is not rotated away unseen
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

    db = open_database(load_settings())
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
