"""Settling an x402 payment and crediting what it bought.

The order is what keeps money safe with the facilitator's network calls kept out of
every transaction: the wallet's account is checked, the authorization's nonce is claimed
(a second claim of it, under either protocol version, is a replay), the facilitator
verifies and settles, and only then one transaction credits the tier's packs as real
money (so the account is funded) to the wallet's account, opening one for a wallet never
seen before.

The payer is the one the facilitator verified and settled, and it must be the wallet the
authorization names (`from`), on the network and for the amount offered: otherwise
nothing is credited or linked and the claim is kept as `mismatch` for the operator. A
refused verification or settlement removes the claim and writes nothing else. A
settlement whose outcome is unknown (the facilitator could not be reached, or answered
that the transfer is pending) keeps the claim `pending`: the chain may still move the
money, so the authorization is not taken again, and the operator reconciles the claim
(`agent-broker admin x402-pending`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session
from x402.http.facilitator_client import HTTPFacilitatorClient
from x402.schemas import SettleResponse
from x402.server_base import settle_with_pending_retry_async

from agent_broker.accounts import credentials, identities
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.engine import Database
from agent_broker.db.session import transaction
from agent_broker.http.outbound import OutboundRefused
from agent_broker.ledger import books
from agent_broker.ledger.service import credit
from agent_broker.membership import service as membership
from agent_broker.payments.errors import ProcessorUnavailable
from agent_broker.payments.x402 import repository
from agent_broker.payments.x402.payload import (
    ERR_NONCE_ALREADY_USED,
    ERR_SETTLEMENT_PENDING,
    PaymentRefused,
    Presented,
)
from agent_broker.pricing import PACK_CREDITS, PACK_MICRO
from agent_broker.problems import ApiKeyDisabled, Problem, Reason

log = structlog.get_logger("agent_broker.payments.x402")


def pending_claims(session: Session, *, before: datetime) -> list[Any]:
    """Claims claimed before `before` that wait for the operator: `pending` ones, whose
    settlement outcome is unknown, and `mismatch` ones, settled otherwise than their
    authorization says. Nothing was credited for either; `note` says why each is kept."""
    return repository.kept_claims(session, before=before)


class X402PaymentReplay(Problem):
    status, reason = 409, Reason.x402_payment_replay
    default_detail = (
        "This payment authorization was already presented; sign a new one (a new nonce)."
    )


_KEPT_DETAIL = {
    "pending": (
        "This payment authorization was already presented and its settlement is pending: "
        "nothing is credited until the operator confirms the transfer on chain. Do not sign "
        "it again; if the transfer fails, sign a new one (a new nonce)."
    ),
    "mismatch": (
        "This payment authorization was settled otherwise than it says and was not "
        "credited; the operator reviews it. Sign a new one (a new nonce)."
    ),
}


class SettlementPending(ProcessorUnavailable):
    """The facilitator broadcast the transfer, or may have, without confirming it."""


class SettlementMismatch(PaymentRefused):
    """The facilitator verified or settled another payer, network or amount than offered."""


@dataclass(frozen=True)
class Settlement:
    """A settled payment: the account it credited, the key of an account it opened (shown
    this once), and the facilitator's receipt."""

    account_id: str
    new_api_key: str | None
    receipt: SettleResponse


def _check_wallet(session: Session, payer: str) -> None:
    account_id = identities.linked_account(session, identities.WALLET_ISSUER, payer)
    if account_id is None:
        return
    account = credentials.account_by_id(session, account_id)
    if account is not None and account.status != "active":
        raise ApiKeyDisabled("The account this wallet pays for is disabled; nothing was charged.")


def _claim(session: Session, presented: Presented, *, now: datetime) -> str:
    claim_id = repository.insert_claim(
        session,
        nonce=presented.nonce,
        payer=presented.payer,
        network=str(presented.requirements.network),
        amount_micro=presented.tier.amount_micro,
        x402_version=presented.version,
        now=now,
    )
    if claim_id is None:
        status = repository.status_of_nonce(session, presented.nonce)
        raise X402PaymentReplay(_KEPT_DETAIL.get(status))
    return claim_id


def _keep(
    session: Session, claim_id: str, *, status: str, note: str, transaction: str | None
) -> None:
    repository.keep_claim(
        session, claim_id, status=status, note=note[:300], transaction=transaction
    )


def _release(session: Session, claim_id: str) -> None:
    repository.delete_claim(session, claim_id)


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
    account_id = identities.linked_account(session, identities.WALLET_ISSUER, presented.payer)
    new_key = None
    if account_id is None:
        opened = membership.open_account(session, settings, now=now)
        account_id, new_key = opened.account_id, opened.api_key
        if (
            identities.link(session, identities.WALLET_ISSUER, presented.payer, account_id, now=now)
            != account_id
        ):
            raise _LostRace()
    if not repository.settle_claim(
        session, claim_id, account_id=account_id, transaction=transaction_hash, now=now
    ):
        raise X402PaymentReplay()  # the claim is no longer pending: never credit it twice
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


def _payer_mismatch(presented: Presented, payer: str | None) -> str:
    """Why a facilitator's payer is not the authorization's `from`, or "" if it is."""
    if (payer or "").lower() == presented.payer:
        return ""
    return f"payer {payer or 'not named'} is not the authorization's {presented.payer}"


def _mismatch(presented: Presented, payer: str | None, network: str, amount: str | None) -> str:
    """What a facilitator's answer names otherwise than the offer, or "" if nothing."""
    wanted_network = str(presented.requirements.network)
    wanted_amount = str(presented.tier.amount_micro)
    if why := _payer_mismatch(presented, payer):
        return why
    if network != wanted_network:
        return f"network {network or 'not named'} is not the offer's {wanted_network}"
    if amount is not None and amount != wanted_amount:
        return f"amount {amount} is not the offer's {wanted_amount}"
    return ""


async def _kept_as_mismatch(
    db: Database, claim_id: str, step: str, why: str, transaction: str
) -> Exception:
    note = f"{step}: {why}"
    await _write(db, _keep, claim_id, status="mismatch", note=note, transaction=transaction or None)
    log.error("x402_settlement_mismatch", claim_id=claim_id, step=step, why=why)
    return SettlementMismatch(
        "settlement_mismatch",
        f"The facilitator's {step} answer does not match this payment ({why}); nothing was "
        "credited, and the operator reviews it.",
    )


async def _kept_as_pending(
    db: Database, claim_id: str, presented: Presented, note: str, transaction: str | None
) -> Exception:
    await _write(db, _keep, claim_id, status="pending", note=note, transaction=transaction)
    log.error("x402_settlement_unknown", claim_id=claim_id, payer=presented.payer, note=note)
    settlement = {"status": "pending", "network": str(presented.requirements.network)}
    if transaction:
        settlement["transaction"] = transaction
    return SettlementPending(
        "The transfer was not confirmed yet, so nothing was credited: the payment stays "
        "pending until the operator confirms it on chain. Do not sign it again.",
        extra={"settlement": settlement},
    )


def _is_pending(settled: SettleResponse) -> bool:
    """A failed settlement that may still land: the facilitator says so, or names a
    transaction it broadcast."""
    return settled.error_reason == ERR_SETTLEMENT_PENDING or bool(settled.transaction)


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
    if why := _payer_mismatch(presented, verified.payer):
        raise await _kept_as_mismatch(db, claim_id, "verify", why, "")
    try:
        # One more settle on "settlement_pending", as x402's own resource servers do: the
        # facilitator then reconciles against the transfer it broadcast.
        settled = await settle_with_pending_retry_async(
            facilitator, presented.payload, presented.requirements
        )
    except (OutboundRefused, ValueError) as exc:
        raise await _kept_as_pending(
            db, claim_id, presented, f"the facilitator did not answer the settlement: {exc}", None
        ) from None
    if not settled.success:
        reason = settled.error_reason or "settlement_failed"
        if _is_pending(settled):
            note = f"settlement {reason}, transaction {settled.transaction or 'not named'}"
            raise await _kept_as_pending(db, claim_id, presented, note, settled.transaction)
        raise await _refused(
            db,
            claim_id,
            reason,
            settled.error_message or "The facilitator could not settle the payment.",
        )
    why = _mismatch(presented, settled.payer, str(settled.network), settled.amount)
    if why:
        raise await _kept_as_mismatch(db, claim_id, "settle", why, settled.transaction)
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
