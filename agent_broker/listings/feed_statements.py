"""The feed's prebuilt statements: one per combination of filters, order and text search,
all with bound parameters. Orders: newest first, or by price either way (newest first
among equal prices), each keyset-paginated on its own columns. Text search matches every
word of `q` in the title or body: SQLite through the FTS5 table `listings_fts`, PostgreSQL
through the `search` tsvector column and its GIN index (migration 0017); neither is in
the models, since each exists on one database only."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import String, and_, bindparam, literal_column, or_, select, text, tuple_
from sqlalchemy.sql import Select

from agent_broker.db.base import UTCDateTime
from agent_broker.db.prepared import Prepared
from agent_broker.listings.models import Listing
from agent_broker.problems import InvalidInput

SORTS = ("newest", "price_asc", "price_desc")
MAX_TERMS = 16
_WORD = re.compile(r"\w+")

_table = Listing.__table__
# Feed entries carry no body, so it is not read.
_COLUMNS = [c for c in _table.c if c.name != "body"]
_statements: dict[tuple[bool, bool, bool, bool, str], Prepared] = {}


def search_terms(q: str) -> list[str]:
    """The words of a query, lower-cased; punctuation and operators are not syntax here."""
    terms = [word.lower() for word in _WORD.findall(q)][:MAX_TERMS]
    if not terms:
        raise InvalidInput("q has no words to search for.")
    return terms


def search_parameter(dialect_name: str, terms: list[str]) -> str:
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
    if sort == "newest":
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


def feed_statement(
    by_category: bool, by_type: bool, after_cursor: bool, searching: bool, sort: str
) -> Prepared:
    key = (by_category, by_type, after_cursor, searching, sort)
    found = _statements.get(key)
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

    made = _statements[key] = Prepared(build)
    return made
