"""Group commit on SQLite (agent_broker.db.group_commit): write transactions of one event
loop that are in line at the write gate share one commit, each in a savepoint of its own.
A member that fails leaves the others' work alone; a commit that fails fails every member
and writes nothing; a member cancelled while it waits still has its work committed."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import text

from agent_broker.config import Settings
from agent_broker.db import group_commit
from agent_broker.db.engine import Database, create_database
from agent_broker.db.session import transaction
from agent_broker.ledger.audit import audit
from agent_broker.ledger.events import fee_captured, on_fees_committed
from agent_broker.pricing import POSTING_FEE_MICRO
from tests.support.accounts import fund
from tests.support.http import new_key

LISTING = {
    "title": "Deduplicate a customer table",
    "category": "data_processing",
    "listing_type": "sell",
    "price_micro": 2_500_000,
    "body": "Fuzzy matching on names and addresses, a report of every merge.",
}


@pytest.fixture
def db(make_settings: Callable[..., Settings], database_url: str) -> Iterator[Database]:
    if not database_url.startswith("sqlite"):
        pytest.skip("group commit is SQLite's")
    database = create_database(make_settings())
    assert database.group_commit
    with database.engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE group_rows (label TEXT PRIMARY KEY, parent TEXT "
            "REFERENCES group_rows (label) DEFERRABLE INITIALLY DEFERRED)"
        )
    yield database
    database.dispose()


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each group committed (requests whose work it wrote or tried to)."""
    sizes: list[int] = []
    real = group_commit.GroupCommit.commit

    def counted(self: group_commit.GroupCommit) -> None:
        if self.is_open:
            sizes.append(self.size + 1)
        real(self)

    monkeypatch.setattr(group_commit.GroupCommit, "commit", counted)
    return sizes


def _stored(db: Database) -> set[str]:
    """What another connection sees: only committed rows."""
    path = db.engine.url.database
    assert path
    with closing(sqlite3.connect(path)) as connection:
        return {label for (label,) in connection.execute("SELECT label FROM group_rows")}


async def _write(db: Database, label: str, *, parent: str | None = None, fail: bool = False):
    async with transaction(db, write=True) as session:
        session.dbapi_connection().execute(
            "INSERT INTO group_rows (label, parent) VALUES (?, ?)", (label, parent)
        )
        if fail:
            raise ValueError(f"{label} refused")


async def _gather(*writes) -> list[BaseException | None]:  # noqa: ANN002
    return list(await asyncio.gather(*writes, return_exceptions=True))


def test_writers_in_line_share_commits(db: Database, commits: list[int]) -> None:
    labels = [f"row-{i}" for i in range(40)]
    outcomes = asyncio.run(_gather(*(_write(db, label) for label in labels)))
    assert outcomes == [None] * 40
    assert _stored(db) == set(labels)
    assert sum(commits) == 40
    assert len(commits) < 40, "no two writers shared a commit"
    assert max(commits) <= group_commit.MAX_GROUP


def test_a_writer_alone_commits_before_it_leaves(db: Database, commits: list[int]) -> None:
    async def one_then_look() -> set[str]:
        await _write(db, "alone")
        return _stored(db)

    assert asyncio.run(one_then_look()) == {"alone"}
    assert commits == [1]


def test_a_failing_member_undoes_only_its_own_work(db: Database, commits: list[int]) -> None:
    outcomes = asyncio.run(
        _gather(_write(db, "first"), _write(db, "second", fail=True), _write(db, "third"))
    )
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], ValueError)
    assert _stored(db) == {"first", "third"}
    assert commits == [3], "the three did not share one commit"


def test_an_orm_rollback_undoes_only_its_member(db: Database) -> None:
    async def orm_member(label: str, *, fail: bool) -> None:
        async with transaction(db, write=True) as session:
            session.execute(
                text("INSERT INTO group_rows (label) VALUES (:label)"), {"label": label}
            )
            if fail:
                session.rollback()  # the ORM's rollback, inside the group

    outcomes = asyncio.run(
        _gather(_write(db, "kept"), orm_member("undone", fail=True), orm_member("orm", fail=False))
    )
    assert outcomes == [None, None, None]
    assert _stored(db) == {"kept", "orm"}


def test_a_failed_commit_fails_every_member_and_writes_nothing(
    db: Database, commits: list[int]
) -> None:
    # A deferred foreign key is only checked at COMMIT: the group's commit fails.
    outcomes = asyncio.run(
        _gather(_write(db, "a"), _write(db, "orphan", parent="missing"), _write(db, "b"))
    )
    assert all(isinstance(outcome, sqlite3.IntegrityError) for outcome in outcomes), outcomes
    assert _stored(db) == set()
    assert commits == [3]
    # The connection is clean again: the next writers commit.
    assert asyncio.run(_gather(_write(db, "c"), _write(db, "d"))) == [None, None]
    assert _stored(db) == {"c", "d"}


def test_a_member_cancelled_while_waiting_is_still_committed(db: Database) -> None:
    async def scenario() -> None:
        first = asyncio.create_task(_write(db, "cancelled"))
        others = [asyncio.create_task(_write(db, f"other-{i}")) for i in range(3)]
        # Let "cancelled" finish its work and join the group, then cancel it while it waits.
        while not (db.write_gate().group.is_open and db.write_gate().group.size):  # type: ignore[attr-defined]
            await asyncio.sleep(0)
        first.cancel()
        assert await _gather(*others) == [None, None, None]
        with pytest.raises(asyncio.CancelledError):
            await first

    asyncio.run(scenario())
    assert _stored(db) == {"cancelled", "other-0", "other-1", "other-2"}


def test_a_writer_cancelled_in_its_pause_still_commits(db: Database) -> None:
    """Cancelled while it lets the loop run once before committing: the group it holds is
    committed there, not left open for a later writer."""

    async def scenario() -> bool:
        task = asyncio.create_task(_write(db, "paused"))
        gate = db.write_gate()
        while not (gate.group.is_open and gate._lock.locked()):  # type: ignore[attr-defined]
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return gate.group.is_open  # type: ignore[attr-defined]

    assert asyncio.run(scenario()) is False
    assert _stored(db) == {"paused"}


def test_fees_are_told_only_once_their_group_is_committed(db: Database) -> None:
    """The fee listeners (the /metrics counter) hear of a fee when it is written: after
    the group's commit, never for a member that failed or a group whose commit failed."""
    told: list[tuple[str, int, set[str]]] = []
    on_fees_committed(db.writer, lambda kind, amount: told.append((kind, amount, _stored(db))))

    async def paying(label: str, amount: int, **options: object) -> None:
        async with transaction(db, write=True) as session:
            fee_captured(session, kind=label, amount_micro=amount)
            session.dbapi_connection().execute(
                "INSERT INTO group_rows (label, parent) VALUES (?, ?)",
                (label, options.get("parent")),
            )
            if options.get("fail"):
                raise ValueError(label)

    outcomes = asyncio.run(_gather(paying("a", 1), paying("refused", 2, fail=True), paying("b", 3)))
    assert outcomes[0] is None and outcomes[2] is None
    assert [(kind, amount) for kind, amount, _ in told] == [("a", 1), ("b", 3)]
    assert all(seen == {"a", "b"} for _, _, seen in told), "told before the commit"

    told.clear()
    failed = asyncio.run(_gather(paying("c", 4), paying("orphan", 5, parent="missing")))
    assert all(isinstance(outcome, sqlite3.IntegrityError) for outcome in failed)
    assert told == []


def test_a_transaction_lost_under_the_group_fails_its_waiting_members(db: Database) -> None:
    async def lose_the_group() -> None:
        async with transaction(db, write=True) as session:
            connection = session.dbapi_connection()
            sqlite3.Connection.rollback(connection)  # as SQLite does itself on some I/O errors

    outcomes = asyncio.run(_gather(_write(db, "lost"), lose_the_group(), _write(db, "after")))
    assert isinstance(outcomes[0], group_commit.GroupLost)
    assert isinstance(outcomes[1], sqlite3.Error)  # its own savepoint went with it
    assert outcomes[2] is None
    assert _stored(db) == {"after"}


def test_only_sqlite_groups_commits(make_settings: Callable[..., Settings], database_url: str):
    """PostgreSQL commits each transaction itself (its own group commit is the server's)."""
    database = create_database(make_settings())
    try:
        assert database.group_commit is database_url.startswith("sqlite")
    finally:
        database.dispose()


def test_concurrent_posts_through_the_app_keep_the_money_right(
    make_app: Callable[..., FastAPI], database_url: str, commits: list[int]
) -> None:
    """Posts sent at once, some refused by the scanner and some retried with the same
    Idempotency-Key while the first is in flight: every fee is charged once, refusals
    charge nothing, retries answer the first result, and the ledger audits clean."""
    if not database_url.startswith("sqlite"):
        pytest.skip("group commit is SQLite's")
    app = make_app()
    with TestClient(app) as client:
        key = client.post("/v1/account/register", json={"accepted_terms": True}).json()
    headers = {"x-api-key": key["api_key"]}
    start = 50 * POSTING_FEE_MICRO
    fund(app, key["account_id"], start, real_money=True)
    clean = {**LISTING}
    refused = {**LISTING, "body": "Write to me at ops@agents.dev for the details."}
    calls = [(new_key(), clean) for _ in range(16)] + [(new_key(), refused) for _ in range(4)]
    calls += calls[:6]  # the same keys again, sent with the first ones

    async def send_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=transport, base_url="http://broker.test") as http,
        ):
            return await asyncio.gather(
                *(
                    http.post(
                        "/v1/listings", json=body, headers={**headers, "Idempotency-Key": idem}
                    )
                    for idem, body in calls
                )
            )

    responses = asyncio.run(send_all())
    by_key: dict[str, set[str]] = {}
    for (idem, body), response in zip(calls, responses, strict=True):
        if body is refused:
            assert response.status_code == 422, response.text
        else:
            assert response.status_code == 201, response.text
            by_key.setdefault(idem, set()).add(response.json()["id"])
    assert len(by_key) == 16 and all(len(ids) == 1 for ids in by_key.values())
    assert len(commits) < len(calls), "no two posts shared a commit"
    with TestClient(app) as client:
        account = client.get("/v1/account", headers=headers).json()
        mine = client.get("/v1/listings/mine", params={"limit": 100}, headers=headers).json()
    assert account["balance_micro"] == start - 16 * POSTING_FEE_MICRO
    assert {listing["id"] for listing in mine["listings"]} == set().union(*by_key.values())
    assert audit(app.state.context.db.engine).found.problems == []
