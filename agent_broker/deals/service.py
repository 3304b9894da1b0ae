"""Deal rules: sealing a thread into a deal, the mirror-imaged package, the purge."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime, timedelta

from sqlalchemy import exists, update
from sqlalchemy.orm import Session

from agent_broker import clock
from agent_broker.accounts.models import AccountRecord
from agent_broker.deals import repository
from agent_broker.deals.errors import DealPurged
from agent_broker.deals.models import Deal
from agent_broker.escrow import service as escrow
from agent_broker.escrow.models import OPEN, DealEscrow
from agent_broker.ledger import service as ledger
from agent_broker.problems import MissingDealRouteCounterparty, MissingDealRouteSelf, NotFound
from agent_broker.reputation import service as reputation
from agent_broker.tokens.keys import Signer
from agent_broker.tokens.service import mint_deal_credential, origin_of

REVEAL_LIFE = timedelta(days=7)
escrow_table = DealEscrow.__table__
PRESENTATION = {
    "header": "Authorization",
    "scheme": "Bearer",
    "type": "http",
    "securityScheme": "bearer",
}
A2A_VERSION, WEBHOOK_VERSION = "1.0", "1"


def ensure_routes(poster: AccountRecord, negotiator: AccountRecord) -> None:
    """Both sides need a deal route to seal (the caller is the poster)."""
    if not poster.deal_route:
        raise MissingDealRouteSelf()
    if not negotiator.deal_route:
        raise MissingDealRouteCounterparty()


def seal(
    session: Session,
    *,
    thread_id: str,
    listing_id: str,
    poster: AccountRecord,
    negotiator: AccountRecord,
    amount_micro: int,
    poster_role: str,
    category: str,
    now: datetime,
    settlement: str = "direct",
) -> Deal:
    """Create the deal; if either side was ever funded with real money, each party's
    facet for the role they played counts one more sealed deal."""
    negotiator_role = "buyer" if poster_role == "seller" else "seller"
    counts = ledger.is_funded(session, poster.id) or ledger.is_funded(session, negotiator.id)
    values: dict = dict(
        id=str(uuid.uuid4()),
        thread_id=thread_id,
        listing_id=listing_id,
        poster_id=poster.id,
        negotiator_id=negotiator.id,
        poster_role=poster_role,
        counts_for_reputation=counts,
        amount_micro=amount_micro,
        settlement=settlement,
        status="active",
        created_at=now,
        reveal_at=now,
        purge_at=now + REVEAL_LIFE,
    )
    for side, account in (("poster", poster), ("negotiator", negotiator)):
        coordinates = {
            "route_hash": secrets.token_hex(8),
            "route": account.deal_route,
            "binding": account.route_protocol_binding,
            "card_url": account.agent_card_url,
            "contact_name": account.contact_name,
            "contact_email": account.contact_email,
            "contact_url": account.contact_url,
        }
        values.update({f"{side}_{name}": value for name, value in coordinates.items()})
    deal = repository.insert(session, **values)
    # Sealing bills both sides (each fee is captured): both were active now, which a
    # counting seal records with the rest of its reputation.
    if counts:
        reputation.record_seal(
            session,
            parties={poster_role: poster.id, negotiator_role: negotiator.id},
            category=category,
            now=now,
        )
    else:
        reputation.touch(session, [poster.id, negotiator.id], now=now)
    return deal


def _coordinates(deal: Deal, side: str) -> dict:
    return {name: getattr(deal, f"{side}_{name}") for name in Deal.COORDINATES}


def _endpoint(route: str, route_hash: str) -> str:
    return (route if route.endswith("/") else route + "/") + route_hash


def package(
    deal: Deal,
    account_id: str,
    *,
    signer: Signer,
    now: datetime,
    held: escrow.Escrow | None = None,
) -> dict:
    """The deal as one party sees it: the counterparty's coordinates, and a credential
    that party presents to the counterparty, and on an escrow deal the escrow (`held`).
    Deterministic: the same package every time."""
    if deal.status == "purged" or (now >= deal.purge_at and not escrow.is_open(held)):
        raise DealPurged()
    mine = "poster" if account_id == deal.poster_id else "negotiator"
    theirs = "negotiator" if mine == "poster" else "poster"
    other = _coordinates(deal, theirs)
    credential = mint_deal_credential(
        signer,
        deal_id=deal.id,
        bearer=mine,
        audience_origin=origin_of(other["route"]),
        now=deal.created_at,
    )
    body: dict = {
        "id": deal.id,
        "status": "active",
        "route": other["route_hash"],
        "credential": credential.token,
        "credential_kid": credential.kid,
        "amount_micro": deal.amount_micro,
        "reveal_at": clock.rfc3339(deal.reveal_at),
        "purge_at": clock.rfc3339(deal.purge_at),
        "created_at": clock.rfc3339(deal.created_at),
    }
    if now >= deal.reveal_at:
        body["status"] = "revealed"
        body["reveal"] = _reveal(other, credential.token, credential.kid)
    if held is not None:
        body["escrow"] = escrow.view(held)
    return body


def evaluator_view(deal: Deal, held: escrow.Escrow, *, now: datetime) -> dict:
    """The deal as its escrow's evaluator sees it: the escrow and the deal's times, and
    nothing that would let the evaluator reach either party."""
    if deal.status == "purged" or (now >= deal.purge_at and not escrow.is_open(held)):
        raise DealPurged()
    return {
        "id": deal.id,
        "status": "revealed" if now >= deal.reveal_at else "active",
        "amount_micro": deal.amount_micro,
        "reveal_at": clock.rfc3339(deal.reveal_at),
        "purge_at": clock.rfc3339(deal.purge_at),
        "created_at": clock.rfc3339(deal.created_at),
        "escrow": escrow.view(held),
    }


def escrow_of(session: Session, deal: Deal) -> escrow.Escrow | None:
    return escrow.find(session, deal.id) if deal.settlement == "escrow" else None


def render(
    session: Session,
    deal: Deal,
    account_id: str,
    *,
    signer: Signer,
    now: datetime,
    held: escrow.Escrow | None = None,
) -> dict:
    """The deal for whoever may read it: a party's package, or the evaluator's view; with
    `held`, the deal's escrow as the caller's step just left it (not read again)."""
    if held is None:
        held = escrow_of(session, deal)
    if account_id in (deal.poster_id, deal.negotiator_id):
        return package(deal, account_id, signer=signer, now=now, held=held)
    if held is not None and escrow.evaluates(held, account_id):
        return evaluator_view(deal, held, now=now)
    raise NotFound("No such deal.")


def extend_purge(session: Session, deal_id: str, *, settled_at: datetime) -> None:
    """An escrow deal is purged a deal's life after it settles, not after its seal."""
    repository.extend_purge(session, deal_id, purge_at=settled_at + REVEAL_LIFE)


def _reveal(other: dict, credential: str, kid: str) -> dict:
    endpoint = _endpoint(other["route"], other["route_hash"])
    contact = {
        key: other[key] for key in ("contact_name", "contact_email", "contact_url") if other[key]
    }
    reveal: dict = {
        "counterparty_endpoint": endpoint,
        "counterparty_contact": contact,
        "credential": credential,
        "credential_kid": kid,
        "credential_presentation": dict(PRESENTATION),
    }
    binding = other["binding"]
    if binding:
        version = WEBHOOK_VERSION if binding.endswith("/webhook-v1") else A2A_VERSION
        reveal["counterparty_interface"] = {
            "url": endpoint,
            "protocolBinding": binding,
            "protocolVersion": version,
        }
    if other["card_url"]:
        reveal["counterparty_agent_card_url"] = other["card_url"]
    return reveal


def read(
    session: Session,
    account_id: str,
    deal_id: str,
    *,
    signer: Signer,
    now: datetime,
    held: escrow.Escrow | None = None,
) -> dict:
    deal = repository.find(session, deal_id)
    if deal is None:
        raise NotFound("No such deal.")
    return render(session, deal, account_id, signer=signer, now=now, held=held)


def purge_due(session: Session, *, now: datetime) -> int:
    """Erase the revealed coordinates of deals past purge_at, for good."""
    erased = {f"{side}_{name}": None for side in Deal.SIDES for name in Deal.COORDINATES}
    table = Deal.__table__
    return (
        session.execute(
            update(table)
            .where(
                table.c.status == "active",
                table.c.purge_at <= now,
                # An escrow deal is kept while its escrow is open.
                ~exists().where(
                    escrow_table.c.deal_id == table.c.id, escrow_table.c.status.in_(OPEN)
                ),
            )
            .values(status="purged", **erased)
        ).rowcount
        or 0
    )
