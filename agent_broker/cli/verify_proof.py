"""`agent-broker verify-proof`: a relying party's check of a reputation proof, from a
shell (agent_broker.client.verify)."""

from __future__ import annotations

import json

import typer

from agent_broker.cli.common import load_settings


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
    party must burn each nonce on first use itself (agent_broker.client.verify.ProofVerifier
    with a persistent NonceBook).

    Exit status: 0 verified; 1 refused (the reason goes to stderr); 2 bad arguments or
    configuration; 3 the key document could not be fetched.
    """
    from agent_broker.client.verify import (
        KeyDocumentUnavailable,
        MemoryNonceBook,
        ProofVerifier,
        failed_step,
    )
    from agent_broker.tokens.service import InvalidOrigin, TokenError, is_proof_nonce

    if not is_proof_nonce(nonce):
        typer.echo("--nonce must be exactly 32 lowercase hex characters", err=True)
        raise typer.Exit(2)
    base_url = service if service is not None else load_settings().public_base_url
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
