"""The UTCDateTime column type: naive UTC stored, aware UTC read back. On SQLite its own
text conversion must store exactly what SQLAlchemy's DATETIME stores (so stored values
keep comparing as text in time order, and older rows read back alike) and read back
what SQLAlchemy's parsing gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import DateTime, bindparam, select
from sqlalchemy.dialects import sqlite

from agent_broker.clock import rfc3339
from agent_broker.db.base import UTCDateTime
from agent_broker.db.engine import Database
from agent_broker.db.prepared import Prepared
from agent_broker.listings.models import Listing

_DIALECT = sqlite.dialect()
_OURS = UTCDateTime().dialect_impl(_DIALECT)
_GENERIC = DateTime().dialect_impl(_DIALECT)

MOMENTS = [
    datetime(2026, 11, 26, 19, 55, 26, 875518, tzinfo=UTC),
    datetime(2026, 11, 26, 19, 55, 26, tzinfo=UTC),  # no fraction: six zeros all the same
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 29, 2, 30, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
    datetime(2026, 7, 1, 12, tzinfo=ZoneInfo("Europe/Paris")),
    datetime(2026, 7, 1, 12, tzinfo=ZoneInfo("UTC")),
]


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_sqlite_text_is_sqlalchemys(moment: datetime) -> None:
    stored = _OURS.bind_processor(_DIALECT)(moment)
    naive_utc = moment.astimezone(UTC).replace(tzinfo=None)
    assert stored == _GENERIC.bind_processor(_DIALECT)(naive_utc)
    read = _OURS.result_processor(_DIALECT, None)(stored)
    assert read == moment and read.tzinfo is UTC


def test_sqlite_text_orders_as_time() -> None:
    store = _OURS.bind_processor(_DIALECT)
    ordered = sorted(MOMENTS)
    assert sorted(ordered, key=store) == ordered


def test_naive_and_missing_values_on_sqlite() -> None:
    with pytest.raises(ValueError, match="naive"):
        _OURS.bind_processor(_DIALECT)(datetime(2026, 1, 1))
    assert _OURS.bind_processor(_DIALECT)(None) is None
    assert _OURS.result_processor(_DIALECT, None)(None) is None


@pytest.mark.parametrize("text", ["2026-11-26", "2026-11-26 19:55", "2026-11-26T19:55:26.5"])
def test_sqlite_reads_other_spellings(text: str) -> None:
    """Text written by hand or by another tool is read as SQLAlchemy's parser reads it."""
    read = _OURS.result_processor(_DIALECT, None)(text)
    assert read == datetime.fromisoformat(text).replace(tzinfo=UTC)
    assert read.tzinfo is UTC
    with_offset = _OURS.result_processor(_DIALECT, None)("2026-11-26 19:55:00+02:00")
    assert with_offset == datetime(2026, 11, 26, 17, 55, tzinfo=UTC)


_ECHO = Prepared(select(bindparam("moment", type_=UTCDateTime()).label("moment")))
_EARLIER = Prepared(
    select((bindparam("a", type_=UTCDateTime()) < bindparam("b", type_=UTCDateTime())).label("yes"))
)


def test_round_trip_through_the_database(db: Database) -> None:
    """On either database: what is written comes back equal and aware in UTC, and a
    comparison in SQL agrees with time order."""
    when = datetime(2026, 11, 26, 19, 55, 26, 875518, tzinfo=timezone(timedelta(hours=5)))
    assert Listing.__table__.c.created_at.type.__class__ is UTCDateTime
    with db.reader() as session:
        moment = _ECHO.scalar(session, moment=when)
        earlier = _EARLIER.scalar(session, a=when, b=when + timedelta(microseconds=1))
        later = _EARLIER.scalar(session, a=when + timedelta(microseconds=1), b=when)
    assert moment == when and moment.tzinfo is UTC
    assert bool(earlier) and not bool(later)


@pytest.mark.parametrize("moment", MOMENTS, ids=str)
def test_rfc3339(moment: datetime) -> None:
    expected = moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    assert rfc3339(moment) == expected
    assert rfc3339(moment).endswith("Z") and "+" not in rfc3339(moment)
