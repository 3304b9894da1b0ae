"""`agent-broker serve` (the API over HTTP) and `agent-broker mcp` (the MCP tools over
stdio)."""

from __future__ import annotations

import typer

from agent_broker.cli.common import load_settings, open_database
from agent_broker.config import Settings


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


def mcp() -> None:
    """Serve the MCP tools over stdio (the account's key in BROKER_API_KEY; logs on stderr)."""
    import os

    import anyio

    from agent_broker.app import create_app
    from agent_broker.http.context import app_context
    from agent_broker.mcp_tools.server import STDIO_KEY_VARIABLE, build_server

    settings = load_settings()
    open_database(settings).dispose()
    app = create_app(settings, run_jobs=False)
    server = build_server(app_context(app), stdio_key=os.environ.get(STDIO_KEY_VARIABLE) or None)

    async def serve_stdio() -> None:
        # The app's start-up registers the signing key, as `serve` does.
        async with app.router.lifespan_context(app):
            await server.run_stdio_async()

    anyio.run(serve_stdio)
