"""The verdicts a soak ends with. Each check compares what the service says, over HTTP, in
its books or through `agent-broker ledger check`, with what the driver saw and expected."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg

from agent_broker.ledger import books
from bench.soak_accounts import Account
from bench.soak_escrow import ESCROW_ROUTES
from bench.soak_flow import DRIVEN_ELSEWHERE
from bench.soak_flow import WRITE_ROUTES as DIRECT_ROUTES
from bench.soak_http import Caller, Tally
from bench.soak_killer import KillLog
from bench.soak_outages import OutageLog
from bench.soak_server import Broker

WRITE_ROUTES = DIRECT_ROUTES | ESCROW_ROUTES
# A killed worker's connections fail when it dies; the client may notice a little later.
FAILURE_WINDOW_S = 5.0


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def write_operations(openapi: dict[str, Any]) -> set[str]:
    """Every "METHOD template" the served OpenAPI document lists as a write."""
    return {
        f"{method.upper()} {path}"
        for path, operations in openapi["paths"].items()
        for method in operations
        if method in ("post", "put", "patch", "delete")
    }


def coverage(openapi: dict[str, Any], tally: Tally) -> Check:
    served = write_operations(openapi) - DRIVEN_ELSEWHERE.keys()
    unknown = sorted(served - WRITE_ROUTES)  # a route the driver was never taught
    stale = sorted(WRITE_ROUTES - served)
    idle = sorted(route for route in served & WRITE_ROUTES if not tally.succeeded(route))
    passed = not (unknown or stale or idle)
    detail = f"{len(served) - len(unknown) - len(idle)}/{len(served)} write routes succeeded"
    for label, routes in (("not driven", unknown), ("not served", stale), ("never 2xx", idle)):
        if routes:
            detail += f"; {label}: {', '.join(routes)}"
    return Check("every write route exercised", passed, detail)


def server_errors(tally: Tally) -> Check:
    count = tally.server_errors()
    return Check("no 5xx but 503", count == 0, f"{count} answers with status >= 500, not 503")


def unavailable(tally: Tally, outages: OutageLog) -> Check:
    """503s only inside the outages' windows; each outage happened as planned."""
    stray = [route for route, when in tally.unavailable if not outages.within(when)]
    windows = ", ".join(
        f"{o.kind} {o.ended - o.started:.1f} s ({o.detail})" for o in outages.outages
    )
    detail = (
        f"{len(tally.unavailable)} answers of 503, all retried; "
        f"{tally.unavailable_writes_landed} writes landed on their retry; outages: "
        f"{windows or 'none'}"
    )
    if stray:
        detail += f"; {len(stray)} 503s outside an outage: {stray[:5]}"
    if outages.failures:
        detail += "; " + " | ".join(outages.failures)
    return Check("503 only during outages", not stray and not outages.failures, detail)


def sealer(figures: dict[str, Any] | None) -> Check:
    """The ledger sealer ran throughout the load, each run's verdict ok."""
    if figures is None:
        return Check("sealer ran throughout", False, "the sealer printed nothing")
    passed = figures["runs"] > 0 and figures["error"] is None and figures["verdict"] == "ok"
    detail = (
        f"{figures['runs']} runs, {figures['outage_runs']} met an outage, "
        f"last verdict {figures['verdict']}"
    )
    if figures["error"]:
        detail += f"; ended by {figures['error']}"
    return Check("sealer ran throughout", passed, detail)


def connection_failures(tally: Tally, kills: KillLog) -> Check:
    """Connections may only fail because a worker was killed just then."""
    stray = [
        route
        for route, when in tally.connection_failures
        if not kills.near_a_kill(when, FAILURE_WINDOW_S)
    ]
    detail = f"{len(tally.connection_failures)} lost connections, all retried"
    if stray:
        detail += f"; {len(stray)} not within {FAILURE_WINDOW_S:g} s of a kill: {stray[:5]}"
    return Check("connections fail only at kills", not stray, detail)


def restarts(kills: KillLog, broker: Broker, wanted_kills: int) -> Check:
    workers = broker.worker_pids()
    problems = []
    if len(kills.kills) < wanted_kills:
        problems.append(f"only {len(kills.kills)} of {wanted_kills} kills happened")
    if kills.unreplaced:
        problems.append(f"workers {[k.pid for k in kills.unreplaced]} were not replaced")
    if not broker.running():
        problems.append(f"serve exited with status {broker.process.returncode}")
    elif len(workers) != broker.workers or not broker.healthy():
        problems.append(f"{len(workers)} of {broker.workers} workers at the end, or unhealthy")
    detail = (
        f"{len(kills.kills)} SIGKILLs, each worker replaced within "
        f"{kills.slowest_replacement_s():.1f} s; {len(workers)} workers at the end"
    )
    return Check("killed workers replaced", not problems, "; ".join(problems) or detail)


def replays(tally: Tally) -> Check:
    mismatched = [p for p in tally.problems if p.startswith("replay of")]
    detail = (
        f"{tally.replays} re-sent Idempotency-Key calls, {len(mismatched)} answered differently"
    )
    return Check("replays answer as first", tally.replays > 0 and not mismatched, detail)


def requests(tally: Tally) -> Check:
    """Anything else a call ran into: a refusal the flow did not expect, no answer."""
    other = [p for p in tally.problems if not p.startswith("replay of")]
    detail = f"{sum(tally.answered.values())} answers; {len(other)} unexpected"
    if other:
        detail += ": " + " | ".join(other[:5])
    return Check("every call answered as the flow expects", not other, detail)


async def balances(caller: Caller, accounts: Iterable[Account]) -> Check:
    """Each funded account's balance and holds, read back, against the driver's books."""
    checked, wrong = 0, []
    for account in accounts:
        if account.uncertain:
            continue
        answer = await caller.call("GET", "/v1/account", api_key=account.api_key)
        seen = (answer.body or {}).get("balance_micro"), (answer.body or {}).get("held_micro")
        expected = (account.spendable_micro, account.shown_held_micro)
        if seen != expected:
            wrong.append(f"{account.account_id}: {seen} != expected {expected}")
        checked += 1
    detail = f"{checked} wallets as expected" if not wrong else "; ".join(wrong[:5])
    return Check("balances and holds as expected", checked > 0 and not wrong, detail)


def fee_books(database_url: str, accounts: list[Account]) -> Check:
    """The fee book holds exactly the fees the driver saw charged, the operator book what
    it paid in, the escrow book the prices of the escrows still open (none, once every
    escrow settled), and the wallets together the rest (with the holds inside it)."""
    if any(account.uncertain for account in accounts):
        return Check("books add up", False, "some money calls never got an answer")
    dsn = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(dsn) as conn:
        system = dict(
            conn.execute(
                "SELECT account_code, SUM(amount_micro) FROM ledger_postings "
                "WHERE account_code IN (%s, %s, %s) GROUP BY account_code",
                (books.FEES, books.OPERATOR, books.ESCROW),
            ).fetchall()
        )
        total, held = conn.execute(
            "SELECT COALESCE(SUM(total_micro), 0), COALESCE(SUM(held_micro), 0) "
            "FROM ledger_accounts WHERE kind = 'wallet'"
        ).fetchone()
    funded = sum(a.funded_micro for a in accounts)
    fees = sum(a.spent_micro for a in accounts)
    escrowed = sum(a.escrowed_micro for a in accounts)
    expected = (
        fees,
        -funded,
        escrowed,
        funded - fees - escrowed,
        sum(a.held_micro for a in accounts),
    )
    seen = (
        system.get(books.FEES, 0),
        system.get(books.OPERATOR, 0),
        system.get(books.ESCROW, 0),
        total,
        held,
    )
    detail = _books_text(seen)
    if seen != expected:
        detail += "; expected " + _books_text(expected)
    return Check("books add up", seen == expected, detail)


def _books_text(books_seen: tuple[int, int, int, int, int]) -> str:
    fees, operator, escrow, wallets, held = books_seen
    return (
        f"fees {fees:,} µUSD, paid in {-operator:,}, in escrow {escrow:,}, "
        f"in wallets {wallets:,} (held {held:,})"
    )


def ledger_check(broker: Broker) -> Check:
    """`ledger check` exits 0 over a chain the sealer extended: not "nothing sealed"."""
    result = broker.cli("ledger", "check")
    lines = (result.stdout + result.stderr).strip().splitlines()
    sealed = "nothing sealed" not in result.stdout
    return Check(
        "agent-broker ledger check, chain sealed",
        result.returncode == 0 and sealed,
        " | ".join(lines[-5:]),
    )
