"""`agent-broker ledger`: the ledger's integrity, checked now."""

from __future__ import annotations

import typer

from agent_broker.cli.common import load_settings, open_database

ledger_app = typer.Typer(help="Ledger integrity.", no_args_is_help=True)


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

    db = open_database(load_settings())
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
