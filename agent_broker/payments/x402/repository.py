"""x402's statements: the claims of payment authorizations (one per nonce) and the wallet
recovery challenges (prepared, agent_broker.db.prepared)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.orm import Session

from agent_broker.accounts.models import WalletChallenge
from agent_broker.db.prepared import Prepared, inserting_unless_taken
from agent_broker.payments.models import X402Payment

# Claims of payment authorizations.

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


_KEEP = Prepared(
    update(_payments)
    .where(_payments.c.id == bindparam("id"), _payments.c.status == "pending")
    .values(
        status=bindparam("status"),
        transaction=bindparam("transaction"),
        note=bindparam("note"),
    )
)
_STATUS_OF_NONCE = Prepared(
    select(_payments.c.status).where(_payments.c.nonce == bindparam("nonce"))
)
# Kept claims: those whose outcome is unknown and those settled otherwise than offered.
_KEPT = Prepared(
    select(
        _payments.c.id,
        _payments.c.status,
        _payments.c.payer,
        _payments.c.network,
        _payments.c.amount_micro,
        _payments.c.nonce,
        _payments.c.transaction,
        _payments.c.note,
        _payments.c.claimed_at,
    )
    .where(
        _payments.c.status != "settled",
        _payments.c.claimed_at <= bindparam("before"),
    )
    .order_by(_payments.c.claimed_at, _payments.c.id)
)


def insert_claim(
    session: Session,
    *,
    nonce: str,
    payer: str,
    network: str,
    amount_micro: int,
    x402_version: int,
    now: datetime,
) -> str | None:
    """Claim the authorization's nonce as a pending payment; the claim's id, or None when
    the nonce is claimed already."""
    claimed = _CLAIM.one_or_none(
        session,
        id=str(uuid.uuid4()),
        nonce=nonce,
        payer=payer,
        network=network,
        amount_micro=amount_micro,
        x402_version=x402_version,
        status="pending",
        account_id=None,
        transaction=None,
        claimed_at=now,
        settled_at=None,
        note=None,
    )
    return None if claimed is None else str(claimed.id)


def status_of_nonce(session: Session, nonce: str) -> str | None:
    """The status of the claim of this nonce, or None without one."""
    return _STATUS_OF_NONCE.scalar(session, nonce=nonce)


def keep_claim(
    session: Session, claim_id: str, *, status: str, note: str, transaction: str | None
) -> None:
    """A pending claim is kept as `status` for the operator."""
    _KEEP.execute(session, id=claim_id, status=status, note=note, transaction=transaction)


def delete_claim(session: Session, claim_id: str) -> None:
    """Remove a pending claim."""
    _RELEASE.execute(session, id=claim_id)


def settle_claim(
    session: Session, claim_id: str, *, account_id: str, transaction: str, now: datetime
) -> bool:
    """A pending claim becomes settled for the account; False if it was no longer pending."""
    return bool(
        _SETTLED.execute(
            session, id=claim_id, account_id=account_id, transaction=transaction, now=now
        )
    )


def kept_claims(session: Session, *, before: datetime) -> list[Any]:
    """The claims not settled, claimed before `before`, oldest first."""
    return _KEPT.all(session, before=before)


# Wallet recovery challenges (payments/x402/wallet.py).

_challenges = WalletChallenge.__table__
_ISSUE = Prepared(
    insert(_challenges).values(
        nonce=bindparam("nonce"),
        message_sha256=bindparam("digest"),
        expires_at=bindparam("expires_at"),
        used_at=None,
    )
)
# Rows of expired messages serve nothing: such a message is refused for its expiration
# time before its nonce is looked up. Each challenge clears them.
_FORGET_EXPIRED = Prepared(delete(_challenges).where(_challenges.c.expires_at < bindparam("now")))
_ISSUED = Prepared(
    select(_challenges.c.message_sha256).where(_challenges.c.nonce == bindparam("nonce"))
)
# Burning the nonce, in the rotation's transaction: a used message matches nothing, and of
# two recoveries racing with one message the second finds it used (on PostgreSQL it waits
# for the first's row lock, then matches nothing).
_BURN = Prepared(
    update(_challenges)
    .where(
        _challenges.c.nonce == bindparam("nonce"),
        _challenges.c.used_at.is_(None),
    )
    .values(used_at=bindparam("now"))
)


def delete_expired_challenges(session: Session, *, now: datetime) -> None:
    _FORGET_EXPIRED.execute(session, now=now)


def insert_challenge(session: Session, nonce: str, *, digest: str, expires_at: datetime) -> None:
    """Keep an issued message's nonce with the message's digest, unused."""
    _ISSUE.execute(session, nonce=nonce, digest=digest, expires_at=expires_at)


def challenge_digest(session: Session, nonce: str) -> str | None:
    """The digest of the message issued with this nonce, or None if none was."""
    issued = _ISSUED.one_or_none(session, nonce=nonce)
    return None if issued is None else issued.message_sha256


def burn_challenge(session: Session, nonce: str, *, now: datetime) -> bool:
    """Mark the challenge of this nonce used; False if it was used already."""
    return bool(_BURN.execute(session, nonce=nonce, now=now))
