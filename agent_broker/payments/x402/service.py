"""Settling an x402 payment and crediting what it bought.

The order is what keeps money safe with the facilitator's network calls kept out of
every transaction: the wallet's account is checked, the authorization's nonce is claimed
(a second claim of it, under either protocol version, is a replay), the facilitator
verifies and settles, and only then one transaction credits the tier's packs as real
money (so the account is funded) to the wallet's account, opening one for a wallet never
seen before. A refused verification or settlement removes the claim and writes nothing
else. A facilitator that cannot be reached during settlement leaves the claim pending:
whether the chain moved the money is unknown, so the authorization is not taken again."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.orm import Session
from x402.http.facilitator_client import HTTPFacilitatorClient
from x402.schemas import SettleResponse

from agent_broker.accounts import credentials, identities
from agent_broker.accounts import service as accounts
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.prepared import Prepared, inserting_unless_taken
from agent_broker.db.session import transaction
from agent_broker.http.outbound import OutboundRefused
from agent_broker.ledger import books
from agent_broker.ledger.pricing import PACK_CREDITS, PACK_MICRO
from agent_broker.ledger.service import credit
from agent_broker.payments.errors import ProcessorUnavailable
from agent_broker.payments.models import X402Payment
from agent_broker.payments.x402.payload import ERR_NONCE_ALREADY_USED, PaymentRefused, Presented
from agent_broker.problems import ApiKeyDisabled, Problem, Reason

log = structlog.get_logger("agent_broker.payments.x402")

# Wallets are identities like an identity provider's subjects: one EVM address is the
# same key holder on every chain, so the link does not name one.
WALLET_ISSUER = "x402:evm"

_payments = X402Payment.__table__
_CLAIM = inserting_unless_taken(_payments, returning=_payments.c.id)
_RELEASE = Prepared(
    delete(_payments).where(_payments.c.id == bindparam("id"), _payments.c.status == "pending")
)
_SETTLED = Prepared(
    update(_payments)
    .where(_payments.c.id == bindparam("id"), _payments.c.status == "pending")
    .values(
        status="settled",
        account_id=bindparam("account_id"),
        transaction=bindparam("transaction"),
        settled_at=bindparam("now"),
    )
)


_PENDING = Prepared(
    select(
        _payments.c.id,
        _payments.c.payer,
        _payments.c.network,
        _payments.c.amount_micro,
        _payments.c.nonce,
        _payments.c.claimed_at,
    )
    .where(_payments.c.status == "pending", _payments.c.claimed_at <= bindparam("before"))
    .order_by(_payments.c.claimed_at, _payments.c.id)
)


def pending_claims(session: Session, *, before: datetime) -> list[Any]:
    """Claims whose settlement outcome is unknown (the facilitator could not be reached
    while settling), claimed before `before`: for the operator to reconcile on chain."""
    return _PENDING.all(session, before=before)


class X402PaymentReplay(Problem):
    status, reason = 409, Reason.x402_payment_replay
    default_detail = (
        "This payment authorization was already presented; sign a new one (a new nonce)."
    )


@dataclass(frozen=True)
class Settlement:
    """A settled payment: the account it credited, the key of an account it opened (shown
    this once), and the facilitator's receipt."""

    account_id: str
    new_api_key: str | None
    receipt: SettleResponse


def _check_wallet(session: Session, payer: str) -> None:
    account_id = identities.linked_account(session, WALLET_ISSUER, payer)
    if account_id is None:
        return
    account = credentials.account_by_id(session, account_id)
    if account is not None and account.status != "active":
        raise ApiKeyDisabled("The account this wallet pays for is disabled; nothing was charged.")


def _claim(session: Session, presented: Presented, *, now: datetime) -> str:
    claimed = _CLAIM.one_or_none(
        session,
        id=str(uuid.uuid4()),
        nonce=presented.nonce,
        payer=presented.payer,
        network=str(presented.requirements.network),
        amount_micro=presented.tier.amount_micro,
        x402_version=presented.version,
        status="pending",
        account_id=None,
        transaction=None,
        claimed_at=now,
        settled_at=None,
    )
    if claimed is None:
        raise X402PaymentReplay()
    return str(claimed.id)


def _release(session: Session, claim_id: str) -> None:
    _RELEASE.execute(session, id=claim_id)


class _LostRace(Exception):
    """Another first payment of the same wallet opened its account at the same moment."""


def _credit(
    session: Session,
    settings: Settings,
    claim_id: str,
    presented: Presented,
    transaction_hash: str,
    *,
    now: datetime,
) -> tuple[str, str | None]:
    account_id = identities.linked_account(session, WALLET_ISSUER, presented.payer)
    new_key = None
    if account_id is None:
        opened = accounts.open_account(session, settings, now=now)
        account_id, new_key = opened.account_id, opened.api_key
        if (
            identities.link(session, WALLET_ISSUER, presented.payer, account_id, now=now)
            != account_id
        ):
            raise _LostRace()
    _SETTLED.execute(
        session, id=claim_id, account_id=account_id, transaction=transaction_hash, now=now
    )
    tier = presented.tier
    credit(
        session,
        account_id,
        tier.amount_micro,
        source=books.X402,
        kind="x402_payment",
        memo=(
            f"x402 payment {transaction_hash}: {tier.amount_micro // PACK_MICRO} packs "
            f"({tier.packs * PACK_CREDITS} credits)"
        ),
        now=now,
        real_money=True,
        reference=claim_id,
    )
    return account_id, new_key


async def _write(db: Database, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    async with transaction(db, write=True) as session:
        return await run(session, fn, session, *args, **kwargs)


async def _refused(db: Database, claim_id: str, reason: str, message: str) -> Exception:
    """The facilitator said no: nothing moved, so the claim goes and the authorization may
    be corrected and sent again; a nonce the chain already used is a replay, though."""
    await _write(db, _release, claim_id)
    if reason == ERR_NONCE_ALREADY_USED:
        return X402PaymentReplay("This authorization's nonce is already used on the chain.")
    return PaymentRefused(reason, message)


async def settle(
    db: Database,
    settings: Settings,
    facilitator: HTTPFacilitatorClient,
    presented: Presented,
    *,
    now: datetime,
) -> Settlement:
    async with transaction(db, write=False) as session:
        await run(session, _check_wallet, session, presented.payer)
    claim_id = await _write(db, _claim, presented, now=now)
    try:
        verified = await facilitator.verify(presented.payload, presented.requirements)
    except (OutboundRefused, ValueError) as exc:
        await _write(db, _release, claim_id)
        log.warning("x402_facilitator_unavailable", step="verify", error=str(exc))
        raise ProcessorUnavailable(
            "The payment facilitator could not verify the payment; nothing was charged."
        ) from None
    if not verified.is_valid:
        raise await _refused(
            db,
            claim_id,
            verified.invalid_reason or "invalid_payment",
            verified.invalid_message or "The facilitator refused the payment.",
        )
    try:
        settled = await facilitator.settle(presented.payload, presented.requirements)
    except (OutboundRefused, ValueError) as exc:
        # Whether the transfer happened is unknown: keep the claim (see the module note).
        log.error(
            "x402_settlement_unknown", claim_id=claim_id, payer=presented.payer, error=str(exc)
        )
        raise ProcessorUnavailable(
            "The payment facilitator did not confirm the settlement; nothing was credited. "
            "This authorization cannot be presented again."
        ) from None
    if not settled.success:
        raise await _refused(
            db,
            claim_id,
            settled.error_reason or "settlement_failed",
            settled.error_message or "The facilitator could not settle the payment.",
        )
    for attempt in (1, 2):
        try:
            account_id, new_key = await _write(
                db, _credit, settings, claim_id, presented, settled.transaction, now=now
            )
            break
        except _LostRace:
            if attempt == 2:
                raise
    log.info(
        "x402_payment_settled",
        claim_id=claim_id,
        account_id=account_id,
        amount_micro=presented.tier.amount_micro,
        new_account=new_key is not None,
    )
    return Settlement(account_id=account_id, new_api_key=new_key, receipt=settled)
