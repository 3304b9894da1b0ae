"""Feed cursors: whatever a client sends as a cursor is either one the feed issued or a
400 invalid_input, on both databases; it never reaches the database as an unusable value."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime

import pytest

from agent_broker.listings import cursor
from agent_broker.problems import InvalidInput
from tests.support.http import assert_problem
from tests.support.market import post

LISTING_ID = "0b8a3c2e-4f6d-4e1a-9c7b-2d5e8f1a3b6c"


def _b64(raw: str | bytes) -> str:
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _cursor(t: object = "2024-05-01T12:00:00+00:00", i: object = LISTING_ID) -> str:
    return _b64(json.dumps({"t": t, "i": i}))


MALFORMED = {
    # Valid ISO dates whose UTC equivalent falls outside datetime's range.
    "year 1 east of UTC": _cursor(t="0001-01-01T00:00:00+14:00"),
    "year 9999 west of UTC": _cursor(t="9999-12-31T23:59:59-14:00"),
    # Strings no listing id can be: PostgreSQL refuses NUL, drivers refuse lone surrogates.
    "NUL in the id": _cursor(i="a\u0000b"),
    "lone surrogate in the id": _b64('{"t":"2024-05-01T12:00:00+00:00","i":"\\ud800"}'),
    "id not a UUID": _cursor(i="x" * 300),
    "id not a string": _cursor(i=12),
    "naive time": _cursor(t="2024-05-01T12:00:00"),
    "time not a string": _cursor(t=1714564800),
    "huge number": _b64('{"t":' + "9" * 400 + ',"i":"x"}'),
    "huge float": _b64('{"t":1e999,"i":"x"}'),
    "deep JSON": _b64("[" * 350),
    "JSON array": _b64("[1, 2]"),
    "JSON string": _b64('"2024-05-01T12:00:00+00:00"'),
    "JSON null": _b64("null"),
    "missing key": _b64('{"t":"2024-05-01T12:00:00+00:00"}'),
    "not JSON": _b64("hello"),
    "not UTF-8": _b64(b"\xff\xfe\xfd"),
    "bad base64": "@@@@",
    "bad padding": "a",
    "not ASCII": "é" * 8,
}


@pytest.mark.parametrize("value", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_cursors_are_invalid_input(value):
    with pytest.raises(InvalidInput):
        cursor.decode(value)


def test_an_issued_cursor_round_trips_in_utc():
    at = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert cursor.decode(cursor.encode(at, LISTING_ID)) == (at, LISTING_ID)
    created_at, _ = cursor.decode(_cursor(t="2024-05-01T14:00:00+02:00"))
    assert created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert created_at.utcoffset().total_seconds() == 0


@pytest.mark.parametrize("value", MALFORMED.values(), ids=MALFORMED.keys())
def test_the_feed_answers_malformed_cursors_with_400(client, seller, value):
    response = client.get("/v1/feed", params={"cursor": value}, headers=seller.headers)
    assert_problem(response, 400, "invalid_input")


def test_a_cursor_far_in_the_past_or_future_is_served(client, seller):
    listing = post(client, seller)
    assert listing.status_code == 201, listing.text
    after_all = _cursor(t="0001-01-01T00:00:00+00:00", i=str(uuid.UUID(int=0)))
    before_all = _cursor(t="9999-12-31T23:59:59.999999+00:00", i=str(uuid.UUID(int=0)))
    for value, expected in ((after_all, []), (before_all, [listing.json()["id"]])):
        page = client.get("/v1/feed", params={"cursor": value}, headers=seller.headers)
        assert page.status_code == 200, page.text
        assert [item["id"] for item in page.json()["listings"]] == expected
