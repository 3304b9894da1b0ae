"""`agent-broker serve` (the API over HTTP) and `agent-broker mcp` (the MCP tools over
stdio)."""

from __future__ import annotations

import ipaddress
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import typer

from agent_broker.cli.common import load_settings, load_signer, open_database
from agent_broker.config import Settings, database_label, served_url_file

PUBLIC_BASE_URL_VARIABLE = "BROKER_PUBLIC_BASE_URL"


def served_base_url(host: str, port: int) -> str:
    """The address a client on this machine reaches `serve --host HOST --port PORT` at: an
    unspecified address (0.0.0.0, ::) is reached on the loopback (127.0.0.1, localhost)."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return f"http://{host}:{port}"  # a host name
    if address.is_unspecified:
        name = "127.0.0.1" if address.version == 4 else "localhost"
    else:
        name = str(address) if address.version == 4 else f"[{address}]"
    return f"http://{name}:{port}"


@contextmanager
def _public_base_url(settings: Settings, host: str, port: int) -> Iterator[Settings]:
    """In development, an unset BROKER_PUBLIC_BASE_URL follows the address served: set in
    the environment, where the workers read their settings, for as long as serving lasts;
    and the address is left in the var folder (served-url), where `agent-broker agent`
    looks for its default. Elsewhere the configured value (or its default) stands."""
    if settings.env != "development":
        yield settings
        return
    given = "public_base_url" in settings.model_fields_set
    if not given:
        settings = settings.model_copy(update={"public_base_url": served_base_url(host, port)})
        os.environ[PUBLIC_BASE_URL_VARIABLE] = settings.public_base_url
    record = served_url_file(settings.var_dir)
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(settings.public_base_url + "\n")
    except OSError:  # a convenience only: serve all the same
        record = None
    try:
        yield settings
    finally:
        if not given:
            os.environ.pop(PUBLIC_BASE_URL_VARIABLE, None)
        # Another server started since may have written its own address: keep that.
        with suppress(OSError):
            if record and record.read_text().strip() == settings.public_base_url:
                record.unlink()


def _log_start(event: str, settings: Settings, **fields: object) -> None:
    """One line of the service's JSON log on standard error: where it answers and which
    database it uses (a SQLite file by its absolute path)."""
    import structlog

    structlog.get_logger("agent_broker.serve").info(
        event, database=database_label(settings.database_url), **fields
    )


def _note_how_workers_write(settings: Settings, workers: int) -> None:
    """Warn (in the service's JSON log) of a worker count that wastes the database's
    write concurrency."""
    import structlog

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
    structlog.get_logger("agent_broker.serve").warning("serve_workers_note", detail=detail)


@contextmanager
def _stopping_cleanly_on_sigterm() -> Iterator[None]:
    """SIGTERM ends serve as Ctrl-C does, its clean-ups run (the served-url record is
    removed). uvicorn serving one worker re-raises the signal once it has shut down, and
    with the default handler that would end the process before any clean-up."""

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def event_loop_for(workers: int) -> str:
    """uvicorn's event loop for `serve --workers N`. uvloop (libuv 1.45 and later) accepts
    one waiting connection per turn of the loop, so on a busy worker a burst of new
    connections waits in line: each turn first serves every connection already open (one
    worker, 64 connections opened at once: p99 170-450 ms against 12-31 ms on asyncio's
    loop, which accepts every waiting connection in one turn, at equal throughput). Several
    workers keep uvloop: the PostgreSQL deal cycle with two workers ran a fifth to a
    quarter slower on asyncio's loop (docs/decisions/performance-9-event-loop.md)."""
    return "asyncio" if workers == 1 else "auto"


def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to bind."),
    port: int = typer.Option(8080, help="Port to bind."),
    workers: int = typer.Option(1, min=1, help="Worker processes."),
    no_migrate: bool = typer.Option(False, "--no-migrate", help="Skip applying migrations."),
) -> None:
    """Serve the API (migrating the database first)."""
    import uvicorn

    from agent_broker.migrations.migrate import upgrade

    settings = load_settings()
    if not no_migrate:
        upgrade(settings.database_url)
    else:
        # Refuse to start rather than answer 500 to every request.
        open_database(settings).dispose()
    # Each worker loads the key too; a key file that holds none stops serve here, in one
    # line, once the database is known to be usable (so no key file is made for nothing).
    load_signer(settings)
    _note_how_workers_write(settings, workers)
    with _public_base_url(settings, host, port) as settings:
        _log_start(
            "serve_start",
            settings,
            address=f"{host}:{port}",
            public_base_url=settings.public_base_url,
        )
        with _stopping_cleanly_on_sigterm():
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


def mcp() -> None:
    """Serve the MCP tools over stdio (the account's key in BROKER_API_KEY; logs on stderr)."""
    import os

    import anyio

    from agent_broker.app import create_app
    from agent_broker.http.context import app_context
    from agent_broker.mcp_tools.server import STDIO_KEY_VARIABLE, build_server

    settings = load_settings()
    open_database(settings).dispose()
    _log_start("mcp_start", settings)
    app = create_app(settings, run_jobs=False)
    server = build_server(app_context(app), stdio_key=os.environ.get(STDIO_KEY_VARIABLE) or None)

    async def serve_stdio() -> None:
        # The app's start-up registers the signing key, as `serve` does.
        async with app.router.lifespan_context(app):
            await server.run_stdio_async()

    anyio.run(serve_stdio)
