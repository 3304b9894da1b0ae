"""`agent-broker admin`: operator actions on accounts and payments (a credit, the x402
payments awaiting reconciliation, an identity link, a key rotation, an escrow ruling, a
payout)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from agent_broker.cli.common import load_settings, load_signer, open_database

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

admin_app = typer.Typer(help="Operator actions.", no_args_is_help=True)


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

    db = open_database(load_settings())
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
            session, issuer, subject, account_id, now=clock.now(), settings=load_settings()
        )
    if linked != account_id:
        typer.echo(f"identity already linked to another account: {linked}", err=True)
        raise typer.Exit(1)
    typer.echo(f"identity {issuer} {subject} reaches account {account_id}")


@admin_app.command("rotate-key")
def admin_rotate_key(account_id: str) -> None:
    """Give an account a new API key, reactivating it if it was disabled: the way back for
    an account whose key was disabled and that no dashboard session reaches. The new key
    is printed once on standard output; the old key fails at once, and the account's
    session and OAuth links go with it, as a rotation from the dashboard does."""
    import structlog

    from agent_broker.accounts import service

    _require_uuid(account_id)
    with _account_transaction(account_id) as session:
        rotated = service.rotate_key(session, load_settings(), account_id)
    structlog.get_logger("agent_broker.admin").info(
        "account key rotated by the operator",
        account_id=account_id,
    )
    typer.echo(rotated["api_key"])
    typer.echo(
        f"account {account_id} is active with a new key ({rotated['key_preview']}); "
        "hand it to the account's holder: it is not shown again",
        err=True,
    )


@contextmanager
def _account_transaction(account_id: str) -> Iterator[Session]:
    """A write transaction on the database, committed when the block ends, once the
    account is known to exist (exit 1 otherwise)."""
    from agent_broker.accounts.models import Account

    db = open_database(load_settings())
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


@admin_app.command("escrow-rule")
def admin_escrow_rule(
    deal_id: str,
    outcome: str = typer.Option(..., "--outcome", help="release, refund or split."),
    seller_share_bps: int | None = typer.Option(
        None, "--seller-share-bps", help="A split only: the seller's share, 0 to 10000."
    ),
    reason: str = typer.Option(..., "--reason", help="Why; signed into the ruling token."),
) -> None:
    """Rule on a rejected escrow delivery where the operator evaluates (the listing named
    no evaluator account). Pays the escrow out as ruled, signs the ruling (PASETO
    svc.ruling.v1) and prints the escrow as JSON. Exit status: 0 ruled; 1 refused (not
    found, not rejected, or the deal names an evaluator account); 2 bad arguments."""
    import json

    from agent_broker import clock
    from agent_broker.deals.settlement import rule_as_operator
    from agent_broker.problems import Problem, Reason
    from agent_broker.tokens.startup import register as register_signer

    if outcome not in ("release", "refund", "split"):
        typer.echo("--outcome must be release, refund or split", err=True)
        raise typer.Exit(2)
    settings = load_settings()
    signer = load_signer(settings)
    db = open_database(settings)
    try:
        # The ruling is checked against the key document: its key is published first, as
        # every serving process publishes its own (with one key, a no-op).
        register_signer(db, signer)
        with db.writer() as session:
            try:
                ruled = rule_as_operator(
                    session,
                    deal_id,
                    outcome=outcome,
                    seller_share_bps=seller_share_bps,
                    reason=reason,
                    signer=signer,
                    now=clock.now(),
                )
            except Problem as refused:
                typer.echo(f"{refused.reason.value}: {refused.detail}", err=True)
                # The ruling's own rules (a split's share, the reason's length) are the
                # arguments' fault, as the outcome's is above.
                bad_arguments = refused.reason is Reason.invalid_input
                raise typer.Exit(2 if bad_arguments else 1) from None
            session.commit()
    finally:
        db.dispose()
    typer.echo(json.dumps(ruled, indent=2))


@admin_app.command("payout")
def admin_payout(
    account_id: str,
    amount_micro: int,
    reference: str = typer.Option(
        ..., "--reference", help="The off-platform payment's reference; kept in the journal."
    ),
) -> None:
    """Journal money paid out to an account off-platform (a bank or chain transfer the
    operator made): it leaves the account's spendable balance for the payouts book.
    Exit status: 0 journalled; 1 unknown account or not enough spendable balance; 2 bad
    arguments."""
    from agent_broker import clock
    from agent_broker.ledger.errors import InsufficientFunds
    from agent_broker.ledger.escrow import payout
    from agent_broker.ledger.service import wallet

    if amount_micro <= 0:
        typer.echo("AMOUNT_MICRO must be a positive integer", err=True)
        raise typer.Exit(2)
    _require_uuid(account_id)
    if not reference.strip():
        typer.echo("--reference must not be empty", err=True)
        raise typer.Exit(2)
    with _account_transaction(account_id) as session:
        now = clock.now()
        try:
            payout(session, account_id, amount_micro, reference=reference.strip()[:100], now=now)
        except InsufficientFunds:
            typer.echo("the account's spendable balance does not cover the payout", err=True)
            raise typer.Exit(1) from None
        view = wallet(session, account_id, now=now)
    typer.echo(
        f"paid out {amount_micro} µUSD from {account_id}; balance_micro={view.spendable_micro}"
    )
