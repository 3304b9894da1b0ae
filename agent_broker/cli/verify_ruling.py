"""`agent-broker verify-ruling`: anyone's check of an escrow ruling, from a shell
(agent_broker.client.ruling)."""

from __future__ import annotations

import json

import typer

from agent_broker.cli.common import load_settings


def verify_ruling(
    token: str = typer.Argument(..., help="The ruling token (PASETO v4.public) of a deal."),
    deal_id: str | None = typer.Option(None, "--deal-id", help="The deal the ruling must be of."),
    reason: str | None = typer.Option(
        None, "--reason", help="The ruling's reason as the deal shows it; its digest must match."
    ),
    service: str | None = typer.Option(
        None,
        "--service",
        help="Base URL of the broker whose key document verifies the ruling "
        "[default: BROKER_PUBLIC_BASE_URL].",
    ),
) -> None:
    """Verify an escrow ruling and print its claims as JSON: the signature against the key
    document fetched from the broker's own base URL, type svc.ruling.v1, expiry, and the
    deal and reason when given.

    Exit status: 0 verified; 1 refused (the reason goes to stderr); 2 bad arguments or
    configuration; 3 the key document could not be fetched.
    """
    from agent_broker.client.ruling import verify_ruling as check
    from agent_broker.client.verify import KeyDocumentUnavailable
    from agent_broker.tokens.service import TokenError

    base_url = service if service is not None else load_settings().public_base_url
    try:
        claims = check(token, service_base_url=base_url, deal_id=deal_id, reason=reason)
    except ValueError as exc:
        typer.echo(f"--service: {exc}", err=True)
        raise typer.Exit(2) from None
    except TokenError as exc:
        typer.echo(f"ruling refused: {exc}", err=True)
        raise typer.Exit(3 if isinstance(exc, KeyDocumentUnavailable) else 1) from None
    typer.echo(json.dumps(claims, indent=2, ensure_ascii=False))
