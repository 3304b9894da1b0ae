"""The soak's accounts: registered and profiled through the API like any agent's, funded
by the operator, and each with the money the driver expects it to hold."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from bench.soak_http import Caller

REGISTER = "/v1/account/register"
CONTACT = "/v1/account/contact"
ROUTE = "/v1/account/route"
FUNDING_MICRO = 10**12  # per trading account: more than any run spends


@dataclass
class Account:
    account_id: str
    api_key: str
    funded_micro: int = 0
    spent_micro: int = 0  # fees charged
    held_micro: int = 0  # deal fees (and escrow prices) held by its open threads
    proofs: int = 0
    uncertain: bool = False  # a money call never got an answer: its outcome is unknown
    handle: str | None = None  # learnt when needed (an escrow listing names its evaluator)
    # Escrow (bench.soak_escrow): the prices of its open escrow deals as buyer, in the
    # escrow book; and what settled escrows moved out of its wallet to the other party
    # (negative: moved in; escrow fees count in spent_micro, as the seller's).
    escrowed_micro: int = 0
    escrow_out_micro: int = 0

    @property
    def spendable_micro(self) -> int:
        return (
            self.funded_micro
            - self.spent_micro
            - self.held_micro
            - self.escrowed_micro
            - self.escrow_out_micro
        )

    @property
    def shown_held_micro(self) -> int:
        """GET /v1/account's held_micro: its holds and its open escrow prices as buyer."""
        return self.held_micro + self.escrowed_micro


@dataclass
class Trader:
    number: int
    accounts: list[Account]  # two traders, then the rival
    rounds: int = 0
    deals: int = 0
    escrow_deals: int = 0  # sealed in escrow (bench.soak_escrow)
    newcomers: list[str] = field(default_factory=list)  # account ids registered in rounds


def new_key() -> str:
    return str(uuid.uuid4())


async def register(caller: Caller, *, keyed: bool) -> Account | None:
    """A new account, or None when its key was lost: a keyed registration whose first
    attempt landed before its connection died is replayed as 200 without the key."""
    answer = await caller.call(
        "POST",
        REGISTER,
        body={"accepted_terms": True},
        idempotency_key=new_key() if keyed else None,
        expect=(201,),
        after_retry={200: None},
    )
    if answer.status != 201:
        return None
    return Account(answer.body["account_id"], answer.body["api_key"])


async def set_profile(caller: Caller, account: Account, desk: str, *, contact: bool) -> bool:
    if contact:
        body = {"contact_name": f"Soak desk {desk}", "contact_email": f"desk{desk}@agents.dev"}
        answer = await caller.call("PUT", CONTACT, api_key=account.api_key, body=body)
    else:
        body = {
            "deal_route": f"https://agents.dev/soak/{desk}/",
            "route_protocol_binding": "JSONRPC",
        }
        answer = await caller.call("PUT", ROUTE, api_key=account.api_key, body=body)
    return answer.status == 204


async def new_trader(caller: Caller, number: int) -> Trader | None:
    """Three accounts with complete profiles (funded afterwards, by the operator)."""
    accounts = []
    for side in range(3):
        account = await register(caller, keyed=True)
        desk = f"{number}-{side}"
        if account is None or not (
            await set_profile(caller, account, desk, contact=True)
            and await set_profile(caller, account, desk, contact=False)
        ):
            return None
        accounts.append(account)
    return Trader(number, accounts)


def fund(database_url: str, accounts: list[Account]) -> None:
    """The operator's journalled credit (as `agent-broker admin credit --real-money` makes
    it) for every trading account, in one transaction."""
    from agent_broker import clock
    from agent_broker.config import Settings
    from agent_broker.db.engine import create_database
    from agent_broker.ledger import books
    from agent_broker.ledger.service import credit

    db = create_database(Settings(env="development", database_url=database_url))
    try:
        with db.writer() as session:
            for account in accounts:
                credit(
                    session,
                    account.account_id,
                    FUNDING_MICRO,
                    source=books.OPERATOR,
                    kind="admin_credit",
                    memo="soak funding",
                    now=clock.now(),
                    real_money=True,
                )
            session.commit()
    finally:
        db.dispose()
    for account in accounts:
        account.funded_micro += FUNDING_MICRO
