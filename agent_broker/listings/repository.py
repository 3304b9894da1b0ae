"""The listings' statements: posting, the row lock a thread or a deal takes, one's own
pages and the feed, prepared (agent_broker.db.prepared) for the hot paths.

The feed has one prebuilt statement per combination of filters, order and text search,
all with bound parameters. Orders: newest first, or by price either way (newest first
among equal prices), each keyset-paginated on its own columns. Text search matches every
word in the title or body: SQLite through the FTS5 table `listings_fts`, PostgreSQL
through the `search` tsvector column and its GIN index (migration 0017); neither is in
the models, since each exists on one database only."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    String,
    and_,
    bindparam,
    func,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select

from agent_broker.db.base import UTCDateTime
from agent_broker.db.prepared import Prepared, inserting
from agent_broker.listings.models import Listing

NEWEST = "newest"

_table = Listing.__table__
_INSERT = inserting(_table, returning=True)
_POSTED = Prepared(
    select(func.count().label("posted")).where(_table.c.poster_id == bindparam("poster_id"))
)
_LOCK = Prepared(select(_table).where(_table.c.id == bindparam("listing_id")).with_for_update())
_MATCH = Prepared(
    update(_table)
    .where(_table.c.id == bindparam("listing_id"), _table.c.status == "live")
    .values(status="matched")
)
_MINE_QUERY = (
    select(_table)
    .where(_table.c.poster_id == bindparam("poster_id"))
    .order_by(_table.c.created_at.desc(), _table.c.id.desc())
    .limit(bindparam("page_rows"))
)
_MINE = Prepared(_MINE_QUERY)
_MINE_AFTER = Prepared(
    _MINE_QUERY.where(
        tuple_(_table.c.created_at, _table.c.id)
        < tuple_(bindparam("after_created", type_=UTCDateTime()), bindparam("after_id"))
    )
)
# Feed entries carry no body, so it is not read.
_COLUMNS = [c for c in _table.c if c.name != "body"]
_feed_statements: dict[tuple[bool, bool, bool, bool, str], Prepared] = {}


def insert(session: Session, **columns: Any) -> Any:
    """Insert a listing, given every column; its row, made from those values where the
    insert goes with the session's next round trip."""
    return _INSERT.queue_row(session, **columns)


def count_posted(session: Session, poster_id: str) -> int:
    """How many listings the account ever posted."""
    return int(_POSTED.scalar(session, poster_id=poster_id) or 0)


def lock(session: Session, listing_id: str) -> Any:
    """The listing's row, locked until the transaction ends; None if there is none."""
    return _LOCK.one_or_none(session, listing_id=listing_id)


def match_if_live(session: Session, listing_id: str) -> bool:
    """Mark the listing matched if it is still live; whether it was."""
    return _MATCH.execute(session, listing_id=listing_id) == 1


def own_page(
    session: Session, poster_id: str, *, page_rows: int, after: tuple[datetime, str] | None
) -> list[Any]:
    """Up to page_rows of the account's listings, newest first, whatever their status,
    after the (created_at, id) of the last one served."""
    if after is None:
        return _MINE.all(session, poster_id=poster_id, page_rows=page_rows)
    after_created, after_id = after
    return _MINE_AFTER.all(
        session,
        poster_id=poster_id,
        page_rows=page_rows,
        after_created=after_created,
        after_id=after_id,
    )


def live_page(
    session: Session,
    *,
    now: datetime,
    page_rows: int,
    sort: str,
    category: str | None = None,
    listing_type: str | None = None,
    terms: list[str] | None = None,
    after: tuple[datetime, str] | None = None,
    after_price: int | None = None,
) -> list[Any]:
    """Up to page_rows live listings, without their bodies, in the `sort` order: of the
    category and type given, with every one of `terms` in the title or body, after the
    (created_at, id) and, for the price orders, the price of the last one served."""
    params: dict = {"now": now, "page_rows": page_rows}
    if category is not None:
        params["category"] = category
    if listing_type is not None:
        params["listing_type"] = listing_type
    if terms is not None:
        params["q"] = _search_parameter(session.bind.dialect.name, terms)
    if after is not None:
        params["after_created"], params["after_id"] = after
        if sort != NEWEST:
            params["after_price"] = after_price
    statement = _feed_statement(
        category is not None, listing_type is not None, after is not None, terms is not None, sort
    )
    return statement.all(session, **params)


def _search_parameter(dialect_name: str, terms: list[str]) -> str:
    """What the statement's :q binds: an FTS5 query of quoted terms (all must match), or
    the words for plainto_tsquery (which ANDs them)."""
    if dialect_name == "sqlite":
        return " ".join(f'"{term}"' for term in terms)
    return " ".join(terms)


def _matching(dialect_name: str) -> Any:
    if dialect_name == "sqlite":
        fts = (
            select(literal_column("rowid"))
            .select_from(text("listings_fts"))
            .where(text("listings_fts MATCH :q").bindparams(bindparam("q", type_=String())))
        )
        return literal_column("listings.rowid").in_(fts)
    return text("listings.search @@ plainto_tsquery('simple', :q)").bindparams(
        bindparam("q", type_=String())
    )


def _after(sort: str) -> Any:
    newer = tuple_(_table.c.created_at, _table.c.id) < tuple_(
        bindparam("after_created", type_=UTCDateTime()), bindparam("after_id")
    )
    if sort == NEWEST:
        return newer
    price, after_price = _table.c.price_micro, bindparam("after_price")
    beyond = price > after_price if sort == "price_asc" else price < after_price
    return or_(beyond, and_(price == after_price, newer))


def _ordered(stmt: Select, sort: str) -> Select:
    newest = (_table.c.created_at.desc(), _table.c.id.desc())
    if sort == "price_asc":
        return stmt.order_by(_table.c.price_micro.asc(), *newest)
    if sort == "price_desc":
        return stmt.order_by(_table.c.price_micro.desc(), *newest)
    return stmt.order_by(*newest)


def _feed_statement(
    by_category: bool, by_type: bool, after_cursor: bool, searching: bool, sort: str
) -> Prepared:
    key = (by_category, by_type, after_cursor, searching, sort)
    found = _feed_statements.get(key)
    if found is not None:
        return found

    def build(dialect_name: str) -> Select:
        stmt = select(*_COLUMNS).where(
            _table.c.status == "live", _table.c.expires_at > bindparam("now")
        )
        if by_category:
            stmt = stmt.where(_table.c.category == bindparam("category"))
        if by_type:
            stmt = stmt.where(_table.c.listing_type == bindparam("listing_type"))
        if searching:
            stmt = stmt.where(_matching(dialect_name))
        if after_cursor:
            stmt = stmt.where(_after(sort))
        return _ordered(stmt, sort).limit(bindparam("page_rows"))

    made = _feed_statements[key] = Prepared(build)
    return made
